//! Redaction of secrets before anything is stored or embedded. Pure.
//!
//! Each rule replaces a match with `[REDACTED:<kind>]` and is counted per kind. Rules run in
//! order, most specific first, so a GitHub token inside an `Authorization:` header is reported
//! as `github` and the header rule does not see it again. Values that look like placeholders
//! (`your-api-key-here`, `xxx`, `<token>`, `${VAR}`, `changeme`, …) are left alone.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Captures;

use super::pattern::Pattern;

/// Counts of redactions per kind.
pub type RedactionCounts = BTreeMap<String, usize>;

struct Rule {
    kind: &'static str,
    re: Pattern,
    /// Capture group holding the secret (0 = whole match); the rest of the match is kept.
    group: usize,
}

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let r = |kind, pattern: &str, group| Rule { kind, re: Pattern::new(pattern).expect("valid rule"), group };
        vec![
            // -----BEGIN RSA PRIVATE KEY----- ... -----END RSA PRIVATE KEY-----
            r(
                "private_key",
                r"-----BEGIN[A-Z ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END[A-Z ]*PRIVATE KEY( BLOCK)?-----|\z)",
                0,
            ),
            // AKIAIOSFODNN7EXAMPLE
            r("aws_access_key", r"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b", 0),
            // aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
            r(
                "aws_secret",
                r#"(?i)aws_?secret_?(access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b"#,
                2,
            ),
            // ghp_… gho_… ghu_… ghs_… ghr_… github_pat_…
            r("github", r"\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b", 0),
            // glpat-xxxxxxxxxxxxxxxxxxxx
            r("gitlab", r"\bgl(pat|dt|rt|ptt|cbt)-[A-Za-z0-9_\-]{20,}\b", 0),
            // xoxb-…, xoxp-…, Slack webhooks
            r("slack", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b|https://hooks\.slack\.com/services/[A-Za-z0-9/]+", 0),
            // sk_live_…, rk_live_…, sk_test_…
            r("stripe", r"\b[sr]k_(live|test)_[A-Za-z0-9]{16,}\b", 0),
            // AIzaSy…
            r("google", r"\bAIza[0-9A-Za-z_\-]{35}\b", 0),
            // sk-ant-api03-…
            r("anthropic", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0),
            // sk-proj-…, sk-…
            r("openai", r"\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0),
            // hf_…
            r("huggingface", r"\bhf_[A-Za-z0-9]{30,}\b", 0),
            // npm_…
            r("npm", r"\bnpm_[A-Za-z0-9]{36}\b", 0),
            // eyJhbGciOi….eyJzdWIiOi….signature
            r("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0),
            // postgresql://user:password@host:5432/db
            r("url_password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:([^\s@/]{3,})@", 1),
            // Authorization: Bearer abc.def / Authorization: Basic dXNlcjpwYXNz
            r(
                "authorization",
                r#"(?i)\bauthorization\b["']?\s*[:=]\s*["']?(bearer|basic|token)\s+([A-Za-z0-9_\-.=+/~]{8,})"#,
                2,
            ),
            // Bearer abc123… anywhere
            r("bearer", r"(?i)\bbearer\s+([A-Za-z0-9_\-.=+/~]{20,})", 1),
            // password = "hunter22", API_KEY: abc, client_secret=…
            r(
                "assignment",
                r#"(?i)\b[a-z0-9_.\-]*(password|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|client[_\-]?secret)[a-z0-9_\-]*["']?\s*(=|:|:=|=>)\s*["']?([^\s"',;`)]{6,})"#,
                3,
            ),
        ]
    })
}

/// Does this token contain a placeholder word (`your`, `example`, `changeme`, …)?
fn placeholder_word(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "your",
        "example",
        "placeholder",
        "changeme",
        "change_me",
        "replace",
        "dummy",
        "sample",
        "redacted",
        "xxxx",
        "here",
        "fake",
        "<",
        "${",
        "{{",
        "process.env",
        "os.environ",
        "env(",
        "getenv",
        "none",
        "null",
        "undefined",
        "secret_key_base",
        "password123",
    ];
    WORDS.iter().any(|w| lower.contains(w))
}

/// Is this assigned value a placeholder, a variable or an expression rather than a secret?
fn placeholder(value: &str) -> bool {
    let v = value.trim_matches(|c: char| c == '"' || c == '\'' || c == '`');
    if placeholder_word(v) {
        return true;
    }
    // A type, array, template or expression (`tokens: [B, T]`, `${{ secrets.X }}`), not a value.
    if !v.chars().next().is_some_and(|c| c.is_ascii_alphanumeric()) {
        return true;
    }
    // An identifier or expression, not a value: `password = get_password()`, `token: user.token`.
    if v.contains('(') || v.contains('.') && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_') {
        return true;
    }
    // Variables named in code (`password = new_password`) are words joined by `_`.
    if v.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        || (v.contains('_') && v.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
    {
        return true;
    }
    // All the same character (`********`, `xxxxxxxx`).
    let mut chars = v.chars();
    let first = chars.next();
    first.is_some_and(|f| chars.all(|c| c == f))
}

/// Redacts secrets in `text`. Returns the scrubbed text and per-kind counts.
pub fn scrub(text: &str) -> (String, RedactionCounts) {
    let mut out = text.to_string();
    let mut counts = RedactionCounts::new();
    for rule in rules() {
        if !rule.re.is_match(&out) {
            continue;
        }
        let mut n = 0;
        let replaced = rule.re.regex().replace_all(&out, |c: &Captures<'_>| {
            let whole = c.get(0).expect("match");
            let Some(secret) = c.get(rule.group) else { return whole.as_str().to_string() };
            if secret.as_str().starts_with("[REDACTED:") || (rule.group != 0 && placeholder(secret.as_str())) {
                return whole.as_str().to_string();
            }
            if rule.group == 0 && rule.kind != "private_key" && placeholder_word(secret.as_str()) {
                return whole.as_str().to_string();
            }
            n += 1;
            let s = whole.as_str();
            let (a, b) = (secret.start() - whole.start(), secret.end() - whole.start());
            // Capture offsets are character boundaries of the match.
            format!("{}[REDACTED:{}]{}", s.get(..a).unwrap_or_default(), rule.kind, s.get(b..).unwrap_or_default())
        });
        if n > 0 {
            out = replaced.into_owned();
            *counts.entry(rule.kind.to_string()).or_default() += n;
        }
    }
    (out, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<String> {
        scrub(text).1.into_keys().collect()
    }

    #[test]
    fn each_kind_is_redacted() {
        let cases = [
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----", "private_key"),
            ("key id AKIAZ7XQ3MPLWR5TN2VK in the config", "aws_access_key"),
            ("aws_secret_access_key = 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", "aws_secret"),
            ("token ghp_Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6 works", "github"),
            ("GITLAB glpat-Xy9zA8bC7dE6fG5hI4jK", "gitlab"),
            ("slack xoxb-2048-1024-Zq8Wm3Lp7Rt2", "slack"),
            ("stripe sk_live_9fK2mQ7xL4pR8tW1zB6n", "stripe"),
            ("maps AIzaSyD8kQ2mW7xL4pR9tZ1bN6vC3hJ5fG0eK2s", "google"),
            ("key sk-ant-api03-Zq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5h", "anthropic"),
            ("OPENAI sk-proj-Zq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5h", "openai"),
            ("hf hf_Zq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5hI4jK", "huggingface"),
            ("npm npm_Zq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5hI4jK2mN9", "npm"),
            ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt"),
            ("DATABASE_URL=postgresql://app:s3cr3tPw@db:5432/app", "url_password"),
            ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "authorization"),
            ("curl -H 'Bearer Zq8Wm3Lp7Rt2Xy9zA8bC7dE6'", "bearer"),
            ("password = \"Hunter2Hunter2\"", "assignment"),
        ];
        for (text, kind) in cases {
            let (out, counts) = scrub(text);
            assert_eq!(counts.get(kind), Some(&1), "{text} -> {out} {counts:?}");
            assert!(out.contains(&format!("[REDACTED:{kind}]")), "{out}");
        }
    }

    #[test]
    fn placeholders_and_code_stay() {
        for text in [
            "ANTHROPIC_API_KEY=your-key-here",
            "API_KEY=your-firebase-api-key",
            "PASSWORD=\"your-app-password\"",
            "password = _broadcast_string_from_rank0",
            "api_key: anthropic_api_key",
            "token = os.environ['TOKEN']",
            "password: ********",
            "let token = get_token();",
            "Password = \"REPLACE_WITH_HASH\"",
            "# tokens: [B, T] -> h: [B, T, D]",
            "token: ${{ secrets.GITHUB_TOKEN }}",
        ] {
            assert!(kinds(text).is_empty(), "{text} was redacted: {}", scrub(text).0);
        }
    }

    #[test]
    fn secret_is_gone_and_rest_kept() {
        let (out, _) = scrub("connect with postgresql://bytebridge:bytebridge123@db:5432 now");
        assert!(!out.contains("bytebridge123"));
        assert!(out.contains("postgresql://bytebridge:[REDACTED:url_password]@db:5432 now"));
    }
}
