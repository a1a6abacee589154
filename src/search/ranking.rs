//! How a search orders its hits, as a caller chooses it ([`Ranking`]: [`Fusion`], [`Context`],
//! [`Recency`], translation), and what each hit carries of its ranking ([`Signals`]). The
//! ranking itself is [`super::fuse`]; the settings measured for each model are
//! [`super::tuned`].

/// How hybrid search merges the semantic and the lexical signal.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Fusion {
    /// The calibrated sum (default): `z + lexical_weight · share`, where `z` is the cosine's
    /// distance above the background in standard deviations and `share` the BM25 over the
    /// query's reference (see the module documentation). Absolute: a document's score does
    /// not depend on the other candidates.
    Calibrated {
        /// Weight of the lexical share; `0` ranks by meaning alone (then context applies).
        lexical_weight: f32,
    },
    /// The blend of z-scores over the pool: `w · z(cos) + (1 − w) · z(bm25)`, mean and spread
    /// taken over the candidates. Relative to the pool; kept for comparison.
    Blend {
        /// Weight of the semantic score, 0–1.
        semantic_weight: f32,
    },
    /// Reciprocal rank fusion over the pool: each signal adds `1 / (k + rank)`. Kept for
    /// comparison.
    Rrf {
        /// The rank offset (60 in the original paper).
        k: f32,
    },
}

impl Default for Fusion {
    /// Chosen on the development halves of three sets (docs/ranking.md, «How results are ranked»).
    fn default() -> Self {
        Fusion::Calibrated { lexical_weight: DEFAULT_LEXICAL_WEIGHT }
    }
}

/// Chosen with multilingual-e5-small on the development halves (2026-11-24; 16 with
/// all-MiniLM-L6-v2, whose meaning signal was weaker).
const DEFAULT_LEXICAL_WEIGHT: f32 = 3.0;

/// How hybrid search lets a hit's conversation lift it: a message whose session holds strong
/// candidates, or whose neighbouring messages match too, is more likely what was asked for
/// than an equally scored message alone (answers span turns; a topic lives in a session).
/// Both weights multiply a score's distance above the background (calibrated fusion) or above
/// the weakest candidate of the pool (the other fusions).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Context {
    /// Weight of the best score in the hit's session (the hit itself included).
    pub session: f32,
    /// Weight of the better score of the two adjacent messages (by message index).
    pub neighbours: f32,
}

impl Context {
    /// No context: the fused ranking as it is.
    pub const NONE: Context = Context { session: 0.0, neighbours: 0.0 };
}

impl Default for Context {
    /// Chosen on the development halves of three sets (docs/ranking.md, «How results are ranked»).
    fn default() -> Self {
        Context { session: 0.7, neighbours: 0.4 }
    }
}

/// Optional preference for newer sessions: a hit's score (its distance above the background)
/// is multiplied by `1 + weight · 2^(−age / half_life)`, age counted from `now`. An active
/// decision counts as new whatever its age (it still holds); superseded and rejected
/// decisions count as `−0.5` (they sink).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Recency {
    /// Age at which the preference halves, in days. Default: 30.
    pub half_life_days: f32,
    /// How much a brand-new hit gains, as a share of its score. Default: 0.5.
    pub weight: f32,
    /// The time ages are counted from (milliseconds since the epoch). Default: now.
    pub now_ms: i64,
}

impl Default for Recency {
    fn default() -> Self {
        Recency { half_life_days: 30.0, weight: 0.5, now_ms: chrono::Utc::now().timestamp_millis() }
    }
}

/// How a search orders its hits: fusion, context, recency, translation, gloss. Default:
/// [`Fusion::default`], [`Context::default`], no recency, [`DEFAULT_TRANSLATION`],
/// [`DEFAULT_GLOSS`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ranking {
    /// How hybrid search merges the two signals.
    pub fusion: Fusion,
    /// How much a hybrid hit's session and neighbours lift it.
    pub context: Context,
    /// Prefer newer sessions (`None`: age does not matter).
    pub recent: Option<Recency>,
    /// How much a document counts that matches the query's words written in another language
    /// (English, Chinese, Japanese, Korean; through [`crate::Glossary`], the built-in one of
    /// the vocabulary of software work and any of one's own), as a share of the same match of
    /// the query's own words: 0 turns
    /// translation off, 1 counts it alike. Lexical and hybrid search. Default:
    /// [`DEFAULT_TRANSLATION`].
    #[serde(default = "default_translation")]
    pub translation: f32,
    /// How much the query's glosses count in the vector semantic search asks with: the query
    /// rewritten in each other language the glossary has its words in ([`crate::Glossary`];
    /// a Chinese question's software words in English, Japanese and Korean), embedded beside
    /// the query, their mean added to its vector at this weight (then normalised). 0 asks
    /// the query's own vector only. A query written partly in Chinese, Japanese or Korean script
    /// is glossed into every other language. Any other query asks with its own vector and,
    /// over a collection whose messages are written in Chinese, Japanese or Korean (a fifth of
    /// them at least, sampled), also with a second one glossed into those languages only; each
    /// document then scores the better of the two, each read against its own background, so
    /// English answers keep the question's own score (a blended vector moved them away).
    /// Semantic
    /// and hybrid search; the glosses are embedded in one batch with the query. Default:
    /// [`DEFAULT_GLOSS`], also when a serialised ranking leaves the field out, whatever the
    /// model: start from [`Ranking::for_model`] to get an English model's 0.
    #[serde(default = "default_gloss")]
    pub gloss: f32,
    /// Hybrid search keeps the best candidate by meaning (highest `semantic_z`) and the best by
    /// words (highest `lexical_share`) among its first three hits, after its own first: a hit
    /// one signal alone ranks first is never buried by the fusion (an answer in another
    /// language has one strong signal and no other). The hits between keep their order; the
    /// scores and relevance of the hits moved up are their own, so the list is in the order of
    /// its scores and relevance except for those two. Default: [`DEFAULT_LEADERS`].
    #[serde(default = "default_leaders")]
    pub leaders: bool,
    /// What a decision in force, and a message a decision was extracted from
    /// ([`crate::Document::decides`]), adds to its hybrid score when the question asks about a
    /// past decision ("why did we pick …", "which … did we settle on", "为什么选 …", "どれにした",
    /// "왜 … 선택", [`crate::asks_about_a_decision`]): the answer is the decision, or the message
    /// where it was made, not the message that asked. Default: [`DEFAULT_DECISION_LIFT`]; no
    /// other question is changed by it.
    #[serde(default = "default_decision_lift")]
    pub decision_lift: f32,
    /// How many vectors' worth the model's typical background weighs beside the collections'
    /// own samples when a cosine is calibrated (its `z`, [`Signals::semantic_z`]): a small or
    /// single-topic history, whose every message is close to the question, is then not its own
    /// yardstick, and a hit's score and relevance read the same on a history of ten messages as
    /// on one of ten thousand. 0 calibrates against the collections alone (as before 2026-11-28). A
    /// model this build has not measured has no typical background and ignores it. Default:
    /// [`DEFAULT_BACKGROUND_PRIOR`].
    #[serde(default = "default_background_prior")]
    pub background_prior: f32,
    /// What a hybrid hit loses when it is a message that ends by asking (its last character a
    /// question mark): a search's question finds the messages that asked it, which restate it
    /// more often than they answer it, and the answer should come first. In score units (one
    /// standard deviation of cosine above the background); its relevance reads it. 0 turns it
    /// off. Default: [`DEFAULT_QUESTION`].
    #[serde(default = "default_question")]
    pub question: f32,
    /// What a hybrid hit gains when it is the message right after one that ends by asking,
    /// both among the search's candidates: the reply to a question that matched is where its
    /// answer most often is. In score units; its relevance reads it. 0 turns it off. Default:
    /// [`DEFAULT_ANSWER`].
    #[serde(default = "default_answer")]
    pub answer: f32,
    /// How far a hybrid hit that closes a turn ([`crate::Document::closes_turn`]: the agent's
    /// last words before the person speaks again, or the person's next message where it
    /// overruled them) moves up among the hits of its own session: in a coding agent's
    /// session that is where it reports what it found or did, while the person's request and
    /// the agent's narration on the way ("let me check the middleware") match a question
    /// about it as well. Each
    /// session's messages are ordered by their scores with this added to its closing
    /// messages, in the places its messages held, at those places' scores and relevance: a
    /// session's own messages are reordered, no session gains or loses a place against another
    /// (its decisions and summary keep theirs; with [`Ranking::leaders`] on, a leader moved up
    /// afterwards can still take a place). Calibrated fusion only. In score units, 0–100; 0
    /// turns it off. Default: [`DEFAULT_CLOSING`].
    #[serde(default = "default_closing")]
    pub closing: f32,
}

/// The default [`Ranking::closing`]: 1, chosen on the development halves (docs/ranking.md,
/// «The agent's last words of a turn»): one-session questions over coding-agent sessions find
/// an answer first more often held out, while a turn the person's next message overruled
/// ([`crate::derive::session::settle`]) leads with the person's decision, not with the
/// recommendation it turned down.
pub const DEFAULT_CLOSING: f32 = 1.0;

fn default_closing() -> f32 {
    DEFAULT_CLOSING
}

/// The default [`Ranking::answer`] (docs/ranking.md, «The reply to a question that matched»).
pub const DEFAULT_ANSWER: f32 = 0.25;

fn default_answer() -> f32 {
    DEFAULT_ANSWER
}

/// The default [`Ranking::question`], chosen on the development halves (docs/ranking.md, «A
/// question is not its own answer»).
pub const DEFAULT_QUESTION: f32 = 1.0;

fn default_question() -> f32 {
    DEFAULT_QUESTION
}

/// The default [`Ranking::background_prior`]: the weight of 256 vectors (one collection's
/// background sample), chosen on the development halves (docs/ranking.md, «A relevance that
/// reads the same on a small history»).
pub const DEFAULT_BACKGROUND_PRIOR: f32 = 256.0;

fn default_background_prior() -> f32 {
    DEFAULT_BACKGROUND_PRIOR
}

/// The default [`Ranking::decision_lift`]: 1 (a hybrid score's unit: one standard deviation of
/// cosine above the background, or the whole question matched by words). Set by that reading,
/// not tuned: none of the questions of the multilingual sets, the Claude Code cases or LoCoMo
/// asks about a past decision, so it changes none of their results; four of the 48 one-session
/// questions over fresh sessions do (docs/ranking.md, «The message where it was decided»).
pub const DEFAULT_DECISION_LIFT: f32 = 1.0;

fn default_decision_lift() -> f32 {
    DEFAULT_DECISION_LIFT
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking {
            fusion: Fusion::default(),
            context: Context::default(),
            recent: None,
            translation: DEFAULT_TRANSLATION,
            gloss: DEFAULT_GLOSS,
            leaders: DEFAULT_LEADERS,
            decision_lift: DEFAULT_DECISION_LIFT,
            background_prior: DEFAULT_BACKGROUND_PRIOR,
            question: DEFAULT_QUESTION,
            answer: DEFAULT_ANSWER,
            closing: DEFAULT_CLOSING,
        }
    }
}

/// The default [`Ranking::leaders`]: off. On, it found more on the development sets and on a
/// ninth multilingual set written before it was judged, one fewer on a tenth, as many on an
/// eleventh, and a list is then no longer in the order of its scores and relevance
/// (docs/ranking.md, «The best hit of each signal kept near the top»).
pub const DEFAULT_LEADERS: bool = false;

fn default_leaders() -> bool {
    DEFAULT_LEADERS
}

/// The default [`Ranking::translation`], chosen on the development halves (docs/ranking.md,
/// «Words across languages»).
pub const DEFAULT_TRANSLATION: f32 = 0.75;

fn default_translation() -> f32 {
    DEFAULT_TRANSLATION
}

/// The default [`Ranking::gloss`]: 1, chosen for multilingual-e5-small on the development sets
/// and judged on a sixth multilingual set written before it (docs/ranking.md, «The question's
/// glosses on the meaning side»). The English models keep 0 ([`Ranking::for_model`]).
pub const DEFAULT_GLOSS: f32 = 1.0;

fn default_gloss() -> f32 {
    DEFAULT_GLOSS
}

/// Which signals matched a hit, and how: the raw values, their calibrated forms, and what
/// context and recency added.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Signals {
    /// Cosine similarity of the best chunk, when semantic search ran (when the question asked
    /// with a second, glossed vector too, [`Ranking::gloss`], the better of the two, read on the
    /// scale of the question's own).
    pub semantic: Option<f32>,
    /// 1-based rank in its collection's semantic list, when the document was in it.
    pub semantic_rank: Option<usize>,
    /// BM25 score, when the lexical index matched the document.
    pub lexical: Option<f32>,
    /// 1-based rank in its collection's lexical list.
    pub lexical_rank: Option<usize>,
    /// The words matched were the query's in another language (see [`Ranking::translation`]):
    /// `lexical` is the BM25 that share of the query's own words would score.
    #[serde(default)]
    pub translated: bool,
    /// The cosine's distance above the background, in standard deviations.
    pub semantic_z: Option<f32>,
    /// BM25 over the query's reference: the share of the query matched (1 ≈ every term once).
    pub lexical_share: Option<f32>,
    /// What the hit's session and neighbours added to the score.
    pub context: f32,
    /// What recency added to the score.
    pub recency: f32,
    /// What being a decision in force, or a message a decision was extracted from, added for a
    /// question about a past decision ([`Ranking::decision_lift`]).
    #[serde(default)]
    pub decision: f32,
    /// What the hit lost for ending by asking ([`Ranking::question`]; zero or negative).
    #[serde(default)]
    pub asked: f32,
    /// What the hit gained as the reply to a message that asked ([`Ranking::answer`]; zero or
    /// positive).
    #[serde(default)]
    pub answers: f32,
    /// What the hit gained or lost when its session's hits were reordered for the messages
    /// closing their turns ([`Ranking::closing`]): the score of the place it took less its
    /// own.
    #[serde(default)]
    pub closes: f32,
}
