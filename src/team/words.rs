//! A team search's words: the question's lexemes and its translations (the glossary's forms of
//! its words in the other languages, [`crate::search::Ranking::translation`]), each candidate scored by
//! BM25 over its words with the project's document frequencies, as the local lexical index
//! scores them (the lexical module: a translation's match counts its weight times its share of the
//! translation, written as the BM25 that share of the question would score).

use std::collections::{HashMap, HashSet};

use crate::doc::Document;
use crate::lexical::LexicalScale;
use crate::lexical::{Glossary, LexicalQuery};

/// BM25's term-frequency saturation and length normalisation (tantivy's, the local index's).
const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

/// A tsquery matching one lexeme, quoted (read with the `tsquery` input cast, which keeps a
/// quoted lexeme as it is: `to_tsquery` would split `foo_bar` again with Postgres's parser).
pub(super) fn quoted(w: &str) -> String {
    format!("'{}'", w.replace('\\', "\\\\").replace('\'', "''"))
}

/// What calibrates a project's BM25: documents, their mean length (in distinct lexemes, as the
/// documents table holds them) and each lexeme's document frequency.
pub(super) struct Corpus {
    pub(super) docs: f32,
    pub(super) mean_len: f32,
    pub(super) df: HashMap<String, f32>,
    /// In a large project, how many documents make a term common (see `Asked::candidates`);
    /// `None`: every frequency counted exactly, every term chooses candidates.
    pub(super) common: Option<f32>,
}

impl Corpus {
    fn idf(&self, term: &str) -> f32 {
        let df = self.df.get(term).copied().unwrap_or(0.0);
        (1.0 + (self.docs - df + 0.5) / (df + 0.5)).ln()
    }
}

/// A document's words as the local index holds them: where each lexeme stands (its count is
/// how often; the phrases and identifiers a question requires match by position), and so how
/// many distinct lexemes it has (its length, as the documents table counts it).
pub(super) struct Words {
    at: HashMap<String, Vec<usize>>,
}

impl Words {
    pub(super) fn of(doc: &Document) -> Words {
        let mut at: HashMap<String, Vec<usize>> = HashMap::new();
        for t in crate::lexical::tokenize::analyze(&doc.lexical_text()) {
            let w = t.text.to_lowercase();
            if !w.is_empty() {
                at.entry(w).or_default().push(t.position);
            }
        }
        Words { at }
    }

    /// Whether the words hold `phrase` (lexemes at their positions relative to each other).
    fn holds(&self, phrase: &[(usize, String)]) -> bool {
        let Some((base, first)) = phrase.first() else { return true };
        let Some(starts) = self.at.get(first) else { return false };
        starts.iter().any(|&s| {
            phrase.iter().all(|(p, t)| {
                let want = (s + p).checked_sub(*base);
                want.is_some_and(|w| self.at.get(t).is_some_and(|ps| ps.contains(&w)))
            })
        })
    }
}

/// One way of asking by words: the question's own lexemes, or one translation of it.
pub(super) struct Asked {
    /// Every lexeme, once: a candidate matches one of them.
    terms: Vec<String>,
    /// Lexemes that count alone in the scale.
    single: Vec<String>,
    /// A translated concept's forms (each form its lexemes), counted once in the scale: the
    /// mean over its forms of what a form scores.
    groups: Vec<Vec<Vec<String>>>,
    /// What a document must hold to match at all, as the local index requires it: each quoted
    /// phrase, each identifier's parts in order, each required word (a phrase of one).
    must: Vec<Vec<(usize, String)>>,
}

impl Asked {
    /// The question's own words as the local index parses them ([`LexicalQuery::parse`]):
    /// common words ("the", "did", "when") left out, as locally.
    fn own(text: &str) -> Asked {
        Asked::of(&LexicalQuery::parse(text))
    }

    /// A parsed query or a translation: its phrases, identifiers and terms count alone, its
    /// concepts once each; its phrases, identifiers' parts and required words must match.
    fn of(q: &LexicalQuery) -> Asked {
        let mut single: Vec<String> = q.phrases.iter().flatten().map(|(_, t)| t.clone()).collect();
        for (whole, parts) in &q.identifiers {
            single.push(whole.clone());
            single.extend(parts.iter().map(|(_, t)| t.clone()));
        }
        single.extend(q.required.iter().chain(&q.optional).cloned());
        let mut seen = HashSet::new();
        single.retain(|t| seen.insert(t.clone()));
        let mut terms = single.clone();
        terms.extend(q.groups.iter().flatten().flatten().filter(|t| seen.insert((*t).clone())).cloned());
        let mut must: Vec<Vec<(usize, String)>> = q.phrases.clone();
        must.extend(q.identifiers.iter().map(|(_, parts)| parts.clone()));
        must.extend(q.required.iter().map(|t| vec![(0, t.clone())]));
        must.retain(|p| !p.is_empty());
        let groups = q.groups.iter().filter(|g| !g.is_empty()).cloned().collect();
        Asked { terms, single, groups, must }
    }

    /// Every lexeme a document must hold, once ([`Asked::must`]'s).
    fn required_terms(&self) -> Vec<&String> {
        let mut seen = HashSet::new();
        self.must.iter().flatten().map(|(_, t)| t).filter(|t| seen.insert(*t)).collect()
    }

    /// Whether a document holds every phrase, identifier and required word.
    pub(super) fn met_by(&self, words: &Words) -> bool {
        self.must.iter().all(|p| words.holds(p))
    }

    /// The tsqueries choosing its candidates in a project: the lexemes the project holds,
    /// without the common ones ([`Corpus::common`]) unless it has no other, any of them ranking;
    /// and the lexemes a candidate must hold (its rarer required ones, all when none is rare;
    /// `None` when nothing is required). `None` when the project holds none of them, or
    /// not every required one.
    pub(super) fn candidates(&self, c: &Corpus) -> Option<(String, Option<String>)> {
        let df = |t: &String| c.df.get(t).copied().unwrap_or(0.0);
        let required = self.required_terms();
        if required.iter().any(|t| df(t) <= 0.0) {
            return None;
        }
        let held: Vec<&String> = self.terms.iter().filter(|t| df(t) > 0.0).collect();
        let rare: Vec<&String> = held.iter().copied().filter(|t| c.common.is_none_or(|n| df(t) <= n)).collect();
        let mut chosen = if rare.is_empty() { held } else { rare };
        // A candidate holds every required lexeme, so each of them may rank it.
        for t in &required {
            if !chosen.contains(t) {
                chosen.push(t);
            }
        }
        let any = chosen.iter().map(|t| quoted(t)).collect::<Vec<_>>().join(" | ");
        // Required in SQL: the rarer required lexemes (a common one would read its whole
        // posting list; the candidate's words are checked for it after), all when none is rare.
        let rare_required: Vec<&&String> = required.iter().filter(|t| c.common.is_none_or(|n| df(t) <= n)).collect();
        let all = if required.is_empty() {
            None
        } else if rare_required.is_empty() {
            Some(required.iter().map(|t| quoted(t)).collect::<Vec<_>>().join(" & "))
        } else {
            Some(rare_required.iter().map(|t| quoted(t)).collect::<Vec<_>>().join(" & "))
        };
        (!chosen.is_empty()).then_some((any, all))
    }

    /// The part of [`Asked::reference`] carried by what every match holds (phrases, identifiers'
    /// parts, required words): a match scores at least this ([`LexicalScale::required`]).
    /// Each lexeme once, as the reference counts it, so it never exceeds the reference.
    fn required(&self, c: &Corpus) -> f32 {
        self.required_terms().into_iter().map(|t| c.idf(t)).sum()
    }

    /// What a document of mean length holding every lexeme once scores (each concept once).
    fn reference(&self, c: &Corpus) -> f32 {
        let singles: f32 = self.single.iter().map(|t| c.idf(t)).sum();
        let groups: f32 =
            self.groups.iter().map(|g| g.iter().flatten().map(|t| c.idf(t)).sum::<f32>() / g.len() as f32).sum();
        singles + groups
    }

    /// BM25 of a document's words (`None`: it matches none of the lexemes, or misses a phrase,
    /// identifier or word the question requires).
    fn bm25(&self, c: &Corpus, words: &Words) -> Option<f32> {
        if !self.met_by(words) {
            return None;
        }
        let len = words.at.len() as f32;
        let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * len / c.mean_len.max(1.0));
        let mut score = 0.0;
        let mut matched = false;
        for t in &self.terms {
            if let Some(f) = words.at.get(t).map(|ps| ps.len() as f32) {
                matched = true;
                score += c.idf(t) * f * (BM25_K1 + 1.0) / (f + norm);
            }
        }
        matched.then_some(score)
    }
}

/// The question's words: its own and, when translation is on, its translations at their weight.
pub(super) struct Question {
    own: Asked,
    translations: Vec<Asked>,
    weight: f32,
}

impl Question {
    pub(super) fn new(text: &str, weight: f32, glossary: &Glossary) -> Question {
        let translations = if weight > 0.0 { glossary.translations(text) } else { Vec::new() };
        Question {
            own: Asked::own(text),
            translations: translations.iter().filter(|t| !t.is_empty()).map(Asked::of).collect(),
            weight,
        }
    }

    /// No word to search for.
    pub(super) fn is_empty(&self) -> bool {
        self.own.terms.is_empty()
    }

    /// The question's own words, then each translation.
    pub(super) fn asked(&self) -> impl Iterator<Item = &Asked> {
        std::iter::once(&self.own).chain(&self.translations)
    }

    /// Every lexeme of the question and its translations, once, quoted as tsqueries.
    pub(super) fn terms(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        self.asked().flat_map(|a| a.terms.iter()).filter(|t| seen.insert(*t)).cloned().collect()
    }

    /// The question's word scoring in one project: its scale and its translations' scales
    /// there, read once for all its candidates.
    pub(super) fn in_corpus<'a>(&'a self, c: &'a Corpus) -> Scoring<'a> {
        Scoring {
            question: self,
            corpus: c,
            reference: self.own.reference(c),
            required: self.own.required(c),
            translations: self.translations.iter().map(|t| (t.reference(c), t.required(c))).collect(),
        }
    }
}

/// A [`Question`] in one project ([`Question::in_corpus`]).
pub(super) struct Scoring<'a> {
    question: &'a Question,
    corpus: &'a Corpus,
    /// The question's own scale there.
    reference: f32,
    /// What of it every match holds.
    required: f32,
    /// Each translation's scale and required part there, in order.
    translations: Vec<(f32, f32)>,
}

impl Scoring<'_> {
    /// What calibrates the question's BM25 in this project ([`LexicalScale`]).
    pub(super) fn scale(&self) -> LexicalScale {
        LexicalScale { reference: self.reference, required: self.required }
    }

    /// A document's words signal: its BM25 for the question, or what its best translation's
    /// share of its own scale would score as the question's (`true`: through a translation);
    /// `None` when it matches no word of either, or misses what each requires.
    pub(super) fn score(&self, words: &Words) -> Option<(f32, bool)> {
        let (q, c) = (self.question, self.corpus);
        let mut best = q.own.bm25(c, words).map(|s| (s, false));
        if q.weight > 0.0 && self.reference > 0.0 {
            for (t, &(r, required)) in q.translations.iter().zip(&self.translations) {
                if r <= 0.0 {
                    continue;
                }
                // As locally: a translation's match scores at least what it requires.
                if let Some(b) = t.bm25(c, words) {
                    let s = q.weight * b.max(required) / r * self.reference;
                    if best.is_none_or(|x| s > x.0) {
                        best = Some((s, true));
                    }
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Document, Role};

    fn corpus(q: &Question, docs: &[&Document]) -> Corpus {
        let words: Vec<Words> = docs.iter().map(|d| Words::of(d)).collect();
        let df = q
            .terms()
            .into_iter()
            .map(|t| {
                let n = words.iter().filter(|w| w.at.contains_key(&t)).count() as f32;
                (t, n)
            })
            .collect();
        let mean_len = words.iter().map(|w| w.at.len() as f32).sum::<f32>() / docs.len() as f32;
        Corpus { docs: docs.len() as f32, mean_len, df, common: None }
    }

    #[test]
    fn a_translation_finds_what_the_own_words_miss_at_its_weight() {
        let g = Glossary::builtin();
        let q = Question::new("데이터베이스 마이그레이션", 1.0, &g);
        assert!(!q.translations.is_empty(), "the built-in glossary translates the Korean words");
        let english = Document::message("s", "m1", 1, Role::User, "the database migration failed on the branch");
        let korean = Document::message("s", "m2", 2, Role::User, "데이터베이스 마이그레이션 완료");
        let other = Document::message("s", "m3", 3, Role::User, "lunch at noon");
        let c = corpus(&q, &[&english, &korean, &other]);
        let scoring = q.in_corpus(&c);
        let (en, through) = scoring.score(&Words::of(&english)).expect("matched through the English translation");
        assert!(through && en > 0.0);
        let (ko, own) = scoring.score(&Words::of(&korean)).expect("matched by its own words");
        assert!(!own && ko > 0.0);
        assert!(scoring.score(&Words::of(&other)).is_none());
        let half = Question::new("데이터베이스 마이그레이션", 0.5, &g);
        let (en_half, _) = half.in_corpus(&c).score(&Words::of(&english)).unwrap();
        assert!((en_half - en / 2.0).abs() < 1e-4, "a translated match counts at the translation's weight");
        assert_eq!(half.in_corpus(&c).score(&Words::of(&korean)).unwrap().0, ko, "the question's own words do not");
        let off = Question::new("데이터베이스 마이그레이션", 0.0, &g);
        assert!(
            off.in_corpus(&c).score(&Words::of(&english)).is_none(),
            "translation off: the English message is not found"
        );
    }

    #[test]
    fn common_words_choose_no_candidates_while_a_rarer_one_does() {
        let q = Question::new("the config of auth", 0.0, &Glossary::builtin());
        let own = q.asked().next().unwrap();
        assert_eq!(own.terms, ["config", "auth"], "the words a local search leaves out are left out");
        let df = |pairs: &[(&str, f32)]| pairs.iter().map(|(t, n)| (t.to_string(), *n)).collect();
        let any = |c: &Corpus| {
            own.candidates(c).map(|(any, all)| {
                assert_eq!(all, None, "nothing required: no second query");
                any
            })
        };
        let mut c =
            Corpus { docs: 100_000.0, mean_len: 20.0, df: df(&[("config", 90_000.0), ("auth", 40.0)]), common: None };
        assert_eq!(any(&c).as_deref(), Some("'config' | 'auth'"), "exact: every word the project holds");
        c.common = Some(2_000.0);
        assert_eq!(any(&c).as_deref(), Some("'auth'"), "large: the common word chooses none");
        c.df = df(&[("config", 90_000.0)]);
        assert_eq!(any(&c).as_deref(), Some("'config'"), "only common words: they choose");
        c.df = df(&[]);
        assert_eq!(any(&c), None, "no word held: no query");
        assert!(Question::new("what did we do", 0.0, &Glossary::builtin()).is_empty(), "common words alone: no words");
    }

    #[test]
    fn phrases_and_identifiers_are_required_as_locally() {
        let q = Question::new("why does verify_token reject \"session store\" writes", 0.0, &Glossary::builtin());
        let own = q.asked().next().unwrap();
        let hit = Document::message("s", "m1", 1, Role::User, "verify_token panics when the session store writes");
        let apart = Document::message("s", "m2", 2, Role::User, "verify the token; the store of a session writes");
        let half = Document::message("s", "m3", 3, Role::User, "verify_token rejects writes");
        let c = corpus(&q, &[&hit, &apart, &half]);
        let scoring = q.in_corpus(&c);
        assert!(scoring.score(&Words::of(&hit)).is_some(), "the identifier's parts in order and the phrase");
        assert!(scoring.score(&Words::of(&apart)).is_none(), "every word, but neither in order");
        assert!(scoring.score(&Words::of(&half)).is_none(), "the identifier without the phrase");
        let (any, all) = own.candidates(&c).unwrap();
        let all = all.expect("required lexemes");
        assert_eq!(all.split(" & ").count(), 4, "every required lexeme, ANDed: {all}");
        assert!(all.split(" & ").all(|t| any.contains(t)), "each ranks too: {any}");
        let scale = scoring.scale();
        assert!(scale.required > 0.0 && scale.required < scale.reference, "{scale:?}");
        let backwards = Document::message("s", "m4", 4, Role::User, "token_verify rejects the session store writes");
        assert!(scoring.score(&Words::of(&backwards)).is_none(), "the identifier's parts in the wrong order");
        let twice = Question::new("auth \"auth token\"", 0.0, &Glossary::builtin());
        let t = twice.in_corpus(&c).scale();
        assert!(t.required <= t.reference, "a word asked twice counts once on both sides: {t:?}");
        let gone =
            Corpus { df: c.df.iter().filter(|(t, _)| *t != "store").map(|(t, n)| (t.clone(), *n)).collect(), ..c };
        assert_eq!(own.candidates(&gone), None, "a required word the project lacks: no candidate can match");
    }

    #[test]
    fn a_question_becomes_a_safe_tsquery() {
        let q = Question::new("it's a \\ path: src/auth.rs", 0.0, &Glossary::builtin());
        let own = q.asked().next().unwrap();
        let c =
            Corpus { docs: 1.0, mean_len: 1.0, df: own.terms.iter().map(|t| (t.clone(), 1.0)).collect(), common: None };
        let (t, all) = own.candidates(&c).unwrap();
        let all = all.expect("a path's parts are required");
        assert!(t.split(" | ").all(|x| x.starts_with('\'') && x.ends_with('\'')), "{t}");
        assert!(all.split(" & ").all(|x| x.starts_with('\'') && x.ends_with('\'')), "{all}");
    }
}
