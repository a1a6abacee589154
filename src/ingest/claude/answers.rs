//! The user's answers to the assistant's multiple-choice questions (Claude Code's
//! `AskUserQuestion`): they arrive as a tool's result, and are the user's turn.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::content_text;

/// What the user answered to the assistant's questions (an `AskUserQuestion` result), one line
/// per question: `question → answer`, and the options not taken after it
/// (`(not: a; b)`). Read from the record's `toolUseResult` (`questions`, `answers`), else from
/// the result's text (`User has answered your questions: "q"="a", …`, older versions). `None`
/// for any other tool's result, and for a question the user declined to answer.
pub(crate) fn answered_questions(v: &Value, content: &Value) -> Option<String> {
    let record = v.get("toolUseResult");
    let mut lines = Vec::new();
    if let Some(Value::Object(answers)) = record.and_then(|r| r.get("answers")) {
        let questions = record.and_then(|r| r.get("questions")).and_then(Value::as_array).cloned().unwrap_or_default();
        for (q, a) in answers {
            let Some(a) = a.as_str() else { continue };
            let options: Vec<&str> = questions
                .iter()
                .find(|x| x.get("question").and_then(Value::as_str) == Some(q.as_str()))
                .and_then(|x| x.get("options")?.as_array())
                .into_iter()
                .flatten()
                .filter_map(|o| o.get("label")?.as_str())
                .filter(|o| !a.split(", ").any(|picked| picked.trim() == *o))
                .collect();
            lines.push(answer_line(q, a, &options));
        }
    } else {
        let result =
            content.as_array()?.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))?;
        let text = content_text(result.get("content").unwrap_or(&Value::Null));
        let rest = text.trim_start().strip_prefix("User has answered your questions:")?;
        for c in answer_re().captures_iter(rest) {
            lines.push(answer_line(c.get(1)?.as_str(), c.get(2)?.as_str(), &[]));
        }
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

fn answer_line(question: &str, answer: &str, not_taken: &[&str]) -> String {
    let mut line = format!("{} → {}", question.trim(), answer.trim());
    if !not_taken.is_empty() {
        line.push_str(&format!(" (not: {})", not_taken.join("; ")));
    }
    line
}

fn answer_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r#""((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)""#).expect("valid"))
}
