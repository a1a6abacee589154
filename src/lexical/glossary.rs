//! The query in other languages (pure: text in, queries out). Words match only words of the
//! same language, so a Chinese question about an English session finds it by meaning alone.
//! [`translations`] looks the query's words up in a small glossary of the vocabulary of
//! software work (`glossary.tsv`: English, Chinese, Japanese and Korean, one concept per line)
//! and writes the query once per other language: the words it found, in that language, each
//! concept matching through any of its forms ([`LexicalQuery::groups`]), plus the query's words
//! the glossary does not know and that are not Chinese, Japanese or Korean (identifiers, names,
//! English words, which other documents may share). The lexical index scores each translation
//! apart and keeps a document's best share of a query (see [`crate::Ranking::translation`]).
//!
//! A Chinese, Japanese or Korean form matches where the query contains it (forms of fewer than
//! two characters are left out: too ambiguous); an English form matches as stemmed words in a
//! row. Where forms overlap, the longest wins (`环境变量` is one concept, not `环境` and more).
//! A query with a quoted phrase is not translated: its words were asked for exactly.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::tokenize::{LexicalQuery, MAX_CLAUSES, analyze, is_cjk};
use crate::error::{Error, Result};

/// The languages of the glossary, in its column order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    English,
    Chinese,
    Japanese,
    Korean,
}

const LANGS: [Lang; 4] = [Lang::English, Lang::Chinese, Lang::Japanese, Lang::Korean];

/// A set of the glossary's languages, in its column order: English, Chinese, Japanese, Korean.
pub(crate) type Languages = [bool; 4];

/// Hangul (Korean), kana (Japanese) and Han (Chinese, and Japanese kanji) as ranges of
/// characters: what [`cjk_languages`] reads, and what a team store's sample reads in SQL.
pub(crate) const HANGUL: [(char, char); 3] =
    [('\u{AC00}', '\u{D7AF}'), ('\u{1100}', '\u{11FF}'), ('\u{3130}', '\u{318F}')];
pub(crate) const KANA: [(char, char); 3] =
    [('\u{3040}', '\u{30FF}'), ('\u{31F0}', '\u{31FF}'), ('\u{FF66}', '\u{FF9F}')];
pub(crate) const HAN: [(char, char); 3] =
    [('\u{4E00}', '\u{9FFF}'), ('\u{3400}', '\u{4DBF}'), ('\u{F900}', '\u{FAFF}')];

/// Which of Chinese, Japanese and Korean a text is written in, by script: Hangul is Korean,
/// kana Japanese, Han characters without kana Chinese (English is never marked).
pub(crate) fn cjk_languages(text: &str) -> Languages {
    let within = |c: char, ranges: &[(char, char)]| ranges.iter().any(|&(a, b)| (a..=b).contains(&c));
    let (mut han, mut kana, mut hangul) = (false, false, false);
    for c in text.chars() {
        hangul |= within(c, &HANGUL);
        kana |= within(c, &KANA);
        han |= within(c, &HAN);
    }
    [false, han && !kana, kana, hangul]
}

/// One concept: its forms per language (each form as analyzed terms), for the Chinese,
/// Japanese and Korean forms their text (matched as a substring of the query), and the text of
/// each language's first form (what a gloss writes, [`Glossary::glosses`]).
#[derive(Debug, Default, Clone)]
struct Concept {
    forms: [Vec<Vec<String>>; 4],
    cjk_text: [Vec<String>; 4],
    first: [Option<String>; 4],
}

/// Concepts in English, Chinese, Japanese and Korean through which a query's words are also
/// asked in the other languages ([`crate::Ranking::translation`]). The text form is one concept
/// a line, four columns separated by tabs (English, Chinese, Japanese, Korean; trailing
/// columns may be left out), alternatives within a column separated by `,`; `#` starts a
/// comment line. A concept needs forms in two languages at least; a Chinese, Japanese or
/// Korean form needs two characters at least (shorter ones are too ambiguous and are left out).
///
/// [`Glossary::builtin`] is convdex's own (359 concepts of the vocabulary of software work and
/// of a desktop's everyday settings).
/// [`crate::Index::open`] adds the concepts of `glossary.tsv` in the data directory, when there
/// is one; a library user sets [`crate::CollectionOptions::glossary`].
#[derive(Clone, Default)]
pub struct Glossary {
    /// Holds the built-in concepts (parsed on first use: a process that never translates, such
    /// as a prompt hook, never spends the millisecond).
    builtin: bool,
    /// Concepts of its own.
    concepts: Vec<Concept>,
}

impl std::fmt::Debug for Glossary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Glossary").field("builtin", &self.builtin).field("own", &self.concepts.len()).finish()
    }
}

/// The built-in concepts, parsed once.
fn builtin_concepts() -> &'static [Concept] {
    static BUILTIN: OnceLock<Vec<Concept>> = OnceLock::new();
    BUILTIN.get_or_init(|| Glossary::parse(include_str!("glossary.tsv")).0.concepts)
}

/// A line of a glossary's text that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlossarySkip {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it and how to fix it.
    pub reason: String,
}

impl Glossary {
    /// convdex's own glossary (`src/lexical/glossary.tsv`), parsed once, when first used.
    pub fn builtin() -> Arc<Glossary> {
        static BUILTIN: OnceLock<Arc<Glossary>> = OnceLock::new();
        BUILTIN.get_or_init(|| Arc::new(Glossary { builtin: true, concepts: Vec::new() })).clone()
    }

    /// Parses the text form (see [`Glossary`]): the concepts, and the lines left out.
    pub fn parse(tsv: &str) -> (Glossary, Vec<GlossarySkip>) {
        let mut out = Glossary::default();
        let mut skipped = Vec::new();
        for (n, line) in tsv.lines().enumerate() {
            let line = line.trim_end_matches(['\r', '\n']);
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let skip = |reason: String| GlossarySkip { line: n + 1, reason };
            let cells: Vec<&str> = line.split('\t').collect();
            if cells.len() > LANGS.len() {
                skipped.push(skip(format!(
                    "{} tab-separated columns; a line holds at most four: English, Chinese, Japanese, Korean",
                    cells.len()
                )));
                continue;
            }
            let mut c = Concept::default();
            for (k, cell) in cells.iter().enumerate() {
                for form in cell.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                    let cjk = form.chars().any(is_cjk);
                    if cjk && form.chars().filter(|&ch| is_cjk(ch)).count() < 2 {
                        continue;
                    }
                    let t = terms(form);
                    if t.is_empty() {
                        continue;
                    }
                    if cjk {
                        c.cjk_text[k].push(form.to_string());
                    }
                    c.first[k].get_or_insert_with(|| form.to_string());
                    c.forms[k].push(t);
                }
            }
            if c.forms.iter().filter(|f| !f.is_empty()).count() < 2 {
                skipped.push(skip(
                    "fewer than two languages with a usable form (columns are separated by tabs; a Chinese, \
                     Japanese or Korean form needs two characters at least)"
                        .into(),
                ));
                continue;
            }
            out.concepts.push(c);
        }
        (out, skipped)
    }

    /// Reads and parses a glossary file ([`Glossary::parse`]).
    pub fn read(path: impl AsRef<Path>) -> Result<(Glossary, Vec<GlossarySkip>)> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Ok(Glossary::parse(&text))
    }

    /// This glossary's concepts and `other`'s.
    pub fn extended(&self, other: &Glossary) -> Glossary {
        Glossary {
            builtin: self.builtin || other.builtin,
            concepts: self.concepts.iter().chain(&other.concepts).cloned().collect(),
        }
    }

    /// Number of concepts.
    pub fn len(&self) -> usize {
        self.builtin_part().len() + self.concepts.len()
    }

    /// No concept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every concept: the built-in ones (when held), then its own.
    fn all(&self) -> Vec<&Concept> {
        self.builtin_part().iter().chain(&self.concepts).collect()
    }

    /// The built-in concepts, when this glossary holds them.
    fn builtin_part(&self) -> &'static [Concept] {
        if self.builtin { builtin_concepts() } else { &[] }
    }
}

/// Terms of one form: its analyzed single-position tokens (an identifier's parts, not the whole).
fn terms(form: &str) -> Vec<String> {
    analyze(form).into_iter().filter(|t| t.position_length == 1).map(|t| t.text).collect()
}

/// A match of a concept in the query: which concept, in which language, over which span
/// (bytes of the text for a Chinese, Japanese or Korean form; token positions for English).
struct Found {
    concept: usize,
    lang: usize,
    span: (usize, usize),
    len: usize,
}

impl Glossary {
    /// The concepts the query holds, where: every glossary form found in `text`, the longest
    /// where forms overlap (the same form in two languages, kanji shared by Chinese and
    /// Japanese, counts for both). Nothing for a query that quotes a phrase.
    fn found(&self, glossary: &[&Concept], text: &str) -> Vec<Found> {
        if text.contains('"') {
            return Vec::new();
        }
        let words: Vec<_> = analyze(text).into_iter().filter(|t| t.position_length == 1).collect();
        let mut found: Vec<Found> = Vec::new();
        for (ci, c) in glossary.iter().enumerate() {
            for (li, forms) in c.forms.iter().enumerate() {
                if LANGS[li] == Lang::English {
                    for f in forms {
                        for start in 0..words.len().saturating_sub(f.len() - 1) {
                            if words[start..start + f.len()].iter().zip(f).all(|(w, t)| w.text == *t) {
                                let span = (words[start].offset_from, words[start + f.len() - 1].offset_to);
                                found.push(Found { concept: ci, lang: li, span, len: span.1 - span.0 });
                            }
                        }
                    }
                } else {
                    for form in &c.cjk_text[li] {
                        // Chinese, Japanese and Korean have no case: the text as it is, so the
                        // spans are the text's own (lower-casing may change byte lengths).
                        for (at, _) in text.match_indices(form.as_str()) {
                            found.push(Found { concept: ci, lang: li, span: (at, at + form.len()), len: form.len() });
                        }
                    }
                }
            }
        }
        // Longest first; a match inside a longer one's span is dropped.
        found.sort_by(|a, b| b.len.cmp(&a.len).then(a.span.cmp(&b.span)).then(a.concept.cmp(&b.concept)));
        let mut kept: Vec<Found> = Vec::new();
        for f in found {
            let inside = kept
                .iter()
                .any(|k| k.concept != f.concept && k.span.0 <= f.span.0 && f.span.1 <= k.span.1 && k.len > f.len);
            if !inside {
                kept.push(f);
            }
        }
        kept
    }

    /// The query's text rewritten in each other language it has glossary words for: each
    /// concept found in another language replaced by its first form in that one, everything
    /// else (the words the glossary does not know, identifiers, punctuation) as it was. What
    /// the meaning side embeds beside the query ([`crate::Ranking::gloss`]); empty when the
    /// glossary knows none of its words or the query quotes a phrase.
    pub fn glosses(&self, text: &str) -> Vec<String> {
        self.glosses_in(text, &[true; 4])
    }

    /// [`Glossary::glosses`] into the languages marked in `into` only (English, Chinese,
    /// Japanese, Korean, in that order).
    pub(crate) fn glosses_in(&self, text: &str, into: &Languages) -> Vec<String> {
        let glossary = self.all();
        let mut kept = self.found(&glossary, text);
        // Spans in text order; of two overlapping matches (one concept in two languages over
        // the same characters) the first stands.
        kept.sort_by_key(|k| (k.span.0, std::cmp::Reverse(k.span.1)));
        let mut out = Vec::new();
        for (li, lang) in LANGS.iter().enumerate().filter(|(li, _)| into[*li]) {
            let mut gloss = String::with_capacity(text.len() * 2);
            let (mut at, mut changed) = (0, false);
            // Words of scripts written with spaces stay apart from their neighbours.
            let spaced = matches!(lang, Lang::English | Lang::Korean);
            for k in &kept {
                if k.span.0 < at {
                    continue;
                }
                // `first` holds a form exactly when the concept has words in this language.
                let Some(form) = glossary[k.concept].first[li].as_deref() else { continue };
                if k.lang == li {
                    continue;
                }
                gloss.push_str(text.get(at..k.span.0).unwrap_or_default());
                if spaced && !gloss.is_empty() && !gloss.ends_with(' ') {
                    gloss.push(' ');
                }
                gloss.push_str(form);
                if spaced && text.get(k.span.1..).and_then(|t| t.chars().next()).is_some_and(|c| c != ' ') {
                    gloss.push(' ');
                }
                at = k.span.1;
                changed = true;
            }
            if changed {
                gloss.push_str(text.get(at..).unwrap_or_default());
                // Kanji shared by Chinese and Japanese rewrite to themselves.
                if gloss != text && !out.contains(&gloss) {
                    out.push(gloss);
                }
            }
        }
        out
    }

    /// The query written in each other language it has glossary words for; empty when the glossary
    /// knows none of its words or the query quotes a phrase.
    pub(crate) fn translations(&self, text: &str) -> Vec<LexicalQuery> {
        let glossary = self.all();
        let kept = self.found(&glossary, text);
        if kept.is_empty() {
            return Vec::new();
        }
        // What stays in every translation: the text without its glossary words and without
        // Chinese, Japanese and Korean characters.
        let mut rest: Vec<char> = Vec::with_capacity(text.len());
        for (i, ch) in text.char_indices() {
            let matched = kept.iter().any(|k| k.span.0 <= i && i < k.span.1);
            rest.push(if matched || is_cjk(ch) { ' ' } else { ch });
        }
        let rest: String = rest.into_iter().collect();
        let mut out = Vec::new();
        for (li, _) in LANGS.iter().enumerate() {
            // A concept the query already holds in this language (kanji shared by Chinese and
            // Japanese) is no translation: it would only repeat the query's own words.
            let own: Vec<usize> = kept.iter().filter(|k| k.lang == li).map(|k| k.concept).collect();
            let mut concepts: Vec<usize> = kept.iter().filter(|k| k.lang != li).map(|k| k.concept).collect();
            concepts.sort_unstable();
            concepts.dedup();
            concepts.retain(|&c| !glossary[c].forms[li].is_empty() && !own.contains(&c));
            if concepts.is_empty() {
                continue;
            }
            let mut q = LexicalQuery::parse(&rest);
            let mut budget = MAX_CLAUSES.saturating_sub(q.optional.len());
            for c in concepts {
                let group: Vec<Vec<String>> = glossary[c].forms[li].clone();
                let size: usize = group.iter().map(Vec::len).sum();
                if size > budget {
                    break;
                }
                budget -= size;
                q.groups.push(group);
            }
            if !q.groups.is_empty() {
                out.push(q);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group_terms(q: &LexicalQuery) -> Vec<String> {
        q.groups.iter().flatten().flatten().cloned().collect()
    }

    fn translations(text: &str) -> Vec<LexicalQuery> {
        Glossary::builtin().translations(text)
    }

    #[test]
    fn every_line_of_the_glossary_is_a_concept_in_two_languages_at_least() {
        let tsv = include_str!("glossary.tsv");
        let (g, skipped) = Glossary::parse(tsv);
        assert_eq!(skipped, [], "lines left out of the built-in glossary");
        let lines = tsv.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).count();
        assert_eq!(g.len(), lines);
        for l in tsv.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
            assert_eq!(l.split('\t').count(), 4, "four tab-separated columns: {l}");
        }
    }

    #[test]
    fn a_glossary_of_ones_own_extends_the_builtin_and_bad_lines_are_named() {
        let text =
            "# mine\r\nheat pump\t热泵机组, 热泵\r\nquote\t报价\t見積もり\t견적\na\tb\tc\td\te\nlonely\n\nrow\t行\n";
        let (mine, skipped) = Glossary::parse(text);
        assert_eq!(mine.len(), 2);
        assert_eq!(skipped.iter().map(|s| s.line).collect::<Vec<_>>(), [4, 5, 7], "{skipped:?}");
        assert!(skipped[0].reason.contains("at most four") && skipped[1].reason.contains("two languages"));
        let both = Glossary::builtin().extended(&mine);
        assert_eq!(both.len(), Glossary::builtin().len() + 2);
        let t = both.translations("热泵报价");
        let words: Vec<String> = t.iter().flat_map(group_terms).collect();
        for w in ["heat", "pump", "quot"] {
            assert!(words.contains(&w.to_string()), "{w} in {words:?}");
        }
        assert!(Glossary::builtin().translations("热泵").is_empty(), "not in the built-in one");
        assert!(matches!(Glossary::read("/no/such/glossary.tsv"), Err(Error::Io { .. })));
    }

    #[test]
    fn a_chinese_question_is_asked_in_english_too_with_its_identifiers() {
        let t = translations("把 .claude 目录推送到 GitHub 仓库");
        let english = t.iter().find(|q| group_terms(q).contains(&"push".to_string())).expect("an English translation");
        let words = group_terms(english);
        for w in ["directori", "folder", "push", "repositori", "repo"] {
            assert!(words.contains(&w.to_string()), "{w} in {words:?}");
        }
        assert!(english.identifiers.iter().any(|(w, _)| w == "claude") || english.optional.contains(&"claud".into()));
        assert!(english.optional.contains(&"github".to_string()), "{:?}", english.optional);
        assert!(!words.iter().chain(&english.optional).any(|w| w.chars().any(is_cjk)), "no Chinese left: {words:?}");
        // Japanese and Korean too: the same concepts in their words.
        assert_eq!(t.len(), 3, "English, Japanese, Korean");
    }

    #[test]
    fn a_gloss_rewrites_the_known_words_and_keeps_the_rest_of_the_text() {
        let g = Glossary::builtin();
        let zh = g.glosses("数据库迁移到新的分支 after v2");
        let english = zh.iter().find(|t| t.contains("database")).expect("an English gloss");
        assert!(english.contains("branch") && english.contains("after v2"), "{english}");
        assert!(english.contains("新的"), "words the glossary does not know stay: {english}");
        assert!(!english.contains("数据库") && !english.contains("分支"), "{english}");
        assert!(zh.iter().any(|t| t.contains("データベース")) && zh.iter().any(|t| t.contains("데이터베이스")));
        let en = g.glosses("set the environment variable on this branch");
        let chinese = en.iter().find(|t| t.contains("环境变量")).expect("a Chinese gloss");
        assert!(chinese.contains("分支") && chinese.contains(" on this "), "{chinese}");
        assert!(en.iter().all(|t| t != "set the environment variable on this branch"), "no gloss repeats the query");
        assert!(g.glosses("\"the database\" schema").is_empty(), "a quoted phrase is asked exactly");
        assert!(g.glosses("hello there").is_empty());
    }

    #[test]
    fn glosses_go_only_into_the_languages_asked_for_and_scripts_name_their_language() {
        let g = Glossary::builtin();
        let q = "set the environment variable on this branch";
        let zh = g.glosses_in(q, &[false, true, false, false]);
        assert_eq!(zh.len(), 1, "{zh:?}");
        assert!(zh[0].contains("环境变量"), "{zh:?}");
        assert!(g.glosses_in(q, &[false; 4]).is_empty());
        assert_eq!(g.glosses_in(q, &[true; 4]), g.glosses(q));
        assert_eq!(cjk_languages("数据库迁移"), [false, true, false, false]);
        assert_eq!(cjk_languages("データベースを移行する"), [false, false, true, false], "kanji with kana");
        assert_eq!(cjk_languages("데이터베이스 이전"), [false, false, false, true]);
        assert_eq!(cjk_languages("migrate the database, ok?"), [false; 4]);
    }

    #[test]
    fn an_english_question_is_asked_in_chinese_japanese_and_korean() {
        let t = translations("pin the database migration to one branch");
        assert_eq!(t.len(), 3);
        let all: Vec<String> = t.iter().flat_map(group_terms).collect();
        for w in ["数据", "据库", "迁移", "分支", "ブラ", "데이", "브랜"] {
            assert!(all.iter().any(|x| x == w), "{w} in {all:?}");
        }
        // The words the glossary does not know stay, for documents that share them.
        assert!(t.iter().all(|q| q.optional.contains(&"pin".to_string())));
    }

    #[test]
    fn the_longest_form_wins_and_a_single_character_never_matches() {
        let t = translations("设置环境变量");
        let all: Vec<String> = t.iter().flat_map(group_terms).collect();
        assert!(all.contains(&"variabl".to_string()), "{all:?}");
        assert!(!t.iter().any(|q| q.groups.iter().any(|g| g == &vec![vec!["environ".to_string()]])), "{all:?}");
        // `行` (row, line) is one character: left out of the glossary's forms.
        assert!(translations("第三行").is_empty());
    }

    proptest::proptest! {
        /// Any text: no panic, every translation has a concept and stays within the clause
        /// budget, and no Chinese, Japanese or Korean word of the text survives outside the
        /// translated concepts.
        #[test]
        fn any_text_translates_without_panic(text in "(\\PC|[目录推送仓库数据库迁移İßﬁ ]|push|repo|\\.claude){0,40}") {
            for q in translations(&text) {
                proptest::prop_assert!(!q.groups.is_empty());
                let terms: usize = q.optional.len() + q.groups.iter().flatten().map(Vec::len).sum::<usize>();
                proptest::prop_assert!(terms <= MAX_CLAUSES * 2, "{terms}");
                proptest::prop_assert!(!q.optional.iter().any(|w| w.chars().any(is_cjk)), "{:?}", q.optional);
            }
        }
    }

    #[test]
    fn a_capital_that_lowercases_longer_does_not_shift_the_spans() {
        // `İ` is two bytes and lower-cases to three: the span of `目录` must be the text's, or
        // it would cover part of the name after it.
        let t = translations("İİİİ 目录 GitHub");
        let en = t.iter().find(|q| group_terms(q).contains(&"directori".to_string())).expect("translated");
        assert!(en.optional.contains(&"github".to_string()), "{:?}", en.optional);
    }

    #[test]
    fn a_word_shared_by_two_languages_is_not_translated_into_either() {
        // `保存` (save) is Chinese and Japanese alike: the question already asks it in both, so
        // no translation repeats it (a Chinese message holding only that word would otherwise
        // match a one-word "translation" of a Chinese question in full).
        let t = translations("保存文件");
        let all: Vec<String> = t.iter().flat_map(group_terms).collect();
        assert!(!all.contains(&"保存".to_string()), "{all:?}");
        assert!(all.contains(&"save".to_string()) && all.contains(&"저장".to_string()), "{all:?}");
        assert!(all.iter().any(|w| w == "ファ"), "file, in Japanese: {all:?}");
    }

    #[test]
    fn quoted_or_unknown_queries_are_not_translated() {
        assert!(translations("\"数据库\" 迁移").is_empty());
        assert!(translations("xyzzy plugh").is_empty());
        assert!(translations("").is_empty());
    }
}
