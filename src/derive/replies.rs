//! Decisions made by a short reply to the assistant's message before it: an accepted
//! recommendation ("yes, go with that"), an approved proposal ("want me to add a keybinding?" —
//! "yes"), a pick among offered options ("B", "cách 2", "lets try 2", "10 minutes") and an answer
//! to an either/or question. Pure: two texts in, at most one decision out.

use std::sync::OnceLock;

use crate::text::pattern::Pattern;

use super::sentences::{Extracted, REASON_WORDS, alternatives, clause_after, code_re, re, sentences, summarize};
use crate::doc::DecisionStatus;

/// The decision a user's reply makes about the assistant's message before it, if any.
pub(super) fn decided_by_reply(reply: &str, proposal: &str) -> Option<Extracted> {
    accepted(reply, proposal)
        .or_else(|| picked(reply, proposal))
        .or_else(|| approved(reply, proposal))
        .or_else(|| answered(reply, proposal))
}

/// A reply that only says yes, in the languages of the corpus ("yes all of it", "要啊", "ㅇㅇ",
/// "đồng ý", "はい、お願いします").
fn affirms(reply: &str) -> bool {
    static YES: OnceLock<Pattern> = OnceLock::new();
    let yes = YES.get_or_init(|| {
        re(r"(?i)^\W*(?:yes|yep|yeah|yup|ok|okay|sure|agreed?|i agree|alright|sounds good|looks good|lgtm|perfect|great|do it|go ahead|go for it|proceed|please do|确认|同意|好的?|可以|行|要啊?|对|是的|嗯|没问题|就这样|はい|お願い|ええ|네|넵|응|ㅇㅇ|좋아|그래|진행|승인|đồng ý|ừ|được|ok nhé)(?:\W|$)")
    });
    let words = reply.split_whitespace().count();
    words <= 12
        && reply.chars().count() <= 80
        && !reply.contains('?')
        && !reply.contains('？')
        && yes.is_match(reply.trim())
        && !reply.to_lowercase().contains(" not ")
}

/// A short reply that repeats the proposal's own words instead of saying yes ("需要我更新配置文件吗？"
/// — "更新配置文件"; "want me to switch now?" — "switch it"): two Chinese, Japanese or Korean
/// characters in a row, or a word of four letters or more, that the question holds too.
fn echoes(reply: &str, question: &str) -> bool {
    static NO: OnceLock<Pattern> = OnceLock::new();
    let r = reply.trim().trim_end_matches(['.', '!', '。', '！']);
    if r.chars().count() > 20 || r.split_whitespace().count() > 4 || r.contains(['?', '？']) {
        return false;
    }
    if NO.get_or_init(|| re(r"(?i)\b(?:no|not|don'?t|never)\b|不|别|没|안|않|아니|いいえ|ない")).is_match(r)
    {
        return false;
    }
    let q = question.to_lowercase();
    let chars: Vec<char> = r.to_lowercase().chars().collect();
    let cjk = |c: char| matches!(c as u32, 0x3040..=0x30FF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF);
    let pair = chars.windows(2).any(|w| cjk(w[0]) && cjk(w[1]) && q.contains(&w.iter().collect::<String>()));
    let word = r
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w.chars().count() >= 4 && w.chars().all(|c| c.is_ascii_alphanumeric()) && q.contains(w));
    pair || word
}

/// The question that ends a proposal and asks for a go ("Want me to add a keybinding for it?",
/// "要不要我帮你加上这个？", "진행할까요?", "確認後に実行します"), without its asking words.
fn proposal_question(proposal: &str) -> Option<(String, String)> {
    static ASK: OnceLock<Pattern> = OnceLock::new();
    let ask = ASK.get_or_init(|| {
        re(r"(?i)^(?:want me to|do you want me to|would you like me to|should i|shall i|can i|ok to|want to|want all of these|does this (?:approach |plan |sound |look |work |match )|does that (?:sound|work)|sounds? good|do you agree|is this ok|要不要我?|需要我|要我|是否同意|请确认|确认后|同意吗|可以吗|好吗|行吗|.{0,60}(?:할까요|드릴까요|까요\?|しますか|しましょうか|よろしいですか|いいですか|nha\?|không\?))")
    });
    let sents = sentences(proposal);
    sents.iter().rev().take(3).find_map(|s| {
        // The asking part may follow a dash: "The backgrounds are borrowed — want to swap them?"
        let tail = s.rsplit(['—', '–']).next().unwrap_or(s).trim_start_matches(|c: char| !c.is_alphanumeric());
        let m = ask.find(tail)?;
        let cut = if m.as_str().chars().count() <= 25 { m.end() } else { 0 };
        let q = tail.get(cut..).unwrap_or(tail).trim().trim_end_matches(['?', '？', '.', '。']);
        // Chinese asks with a final particle: "需要我现在切换吗".
        let q = q.trim_end_matches(['吗', '呢', '么']).trim().to_string();
        Some((s.clone(), q))
    })
}

/// "Does this approach work for you?", "Want all of these?", "진행할까요?": the question names
/// nothing; what is approved is in the proposal above it.
fn generic(full: &str, q: &str) -> bool {
    static THIS: OnceLock<Pattern> = OnceLock::new();
    let this = THIS.get_or_init(|| {
        re(r"(?i)\b(?:all of (?:these|this|that|them|it)|this (?:approach|plan|direction|split|structure)|these changes)\b|这个方案|这些改动|이 방향|이렇게|この方針|この方向")
    });
    // Chinese, Japanese and Korean run their words together: a few characters are a verb alone
    // ("现在切换"), more name its object too ("更新配置文件").
    let cjk = q.chars().any(|c| matches!(c as u32, 0x3040..=0x30FF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF));
    let short = if cjk { q.chars().count() <= 4 } else { q.split_whitespace().count() <= 3 && q.chars().count() <= 30 };
    short || this.is_match(full)
}

/// Asking to run, ship or clean something is a step of work, not a decision about the work.
fn only_an_operation(q: &str) -> bool {
    static OP: OnceLock<Pattern> = OnceLock::new();
    OP.get_or_init(|| {
        re(r"(?i)\b(?:push|commit|rebase|run|build|deploy|test|check|verify|continue|restart|clean ?up|delete|scp|merge|retry|start)\b|构建|提交|推送|运行|重启|删除|清理|调用|工具|继续|检查|查看|确认|삭제|정리|푸시|커밋|빌드|재시작|xóa|実行")
    })
    .is_match(q)
}

/// "Want me to save this as the new screensaver?" — "yes": the proposal is the decision. A
/// generic question ("does this approach work for you?", "진행할까요?") takes its content from the
/// proposal's list items or the sentences just before it.
fn approved(reply: &str, proposal: &str) -> Option<Extracted> {
    let (full, q) = proposal_question(proposal)?;
    let echoed = !affirms(reply) && echoes(reply, &q);
    if !affirms(reply) && !echoed {
        return None;
    }
    // Repeating the words of a step of work ("检查其他配置吗？" — "检查下") runs the step.
    if echoed && only_an_operation(&q) {
        return None;
    }
    let generic = generic(&full, &q);
    // What is approved is what stands right above the question: its list when the question
    // follows one, else the sentences before it.
    let marked = super::sentences::marked_sentences(proposal);
    let asked_at = marked.iter().rposition(|(s, _)| *s == full).unwrap_or(marked.len());
    let after_list = asked_at > 0 && marked.get(asked_at - 1).is_some_and(|(_, item)| *item);
    let what = if generic {
        let items: Vec<String> = if after_list || !marked.iter().any(|(_, item)| *item) {
            options(proposal).into_iter().map(|(_, t)| t).take(3).collect()
        } else {
            Vec::new()
        };
        let items = if items.is_empty() {
            let mut last: Vec<String> = marked
                .iter()
                .take(asked_at)
                .rev()
                .map(|(s, _)| s)
                .filter(|s| !s.contains('?') && !s.contains('？'))
                .take(2)
                .cloned()
                .collect();
            last.reverse();
            last
        } else {
            items
        };
        if items.is_empty() {
            return None;
        }
        items.join("; ")
    } else if only_an_operation(&q) {
        return None;
    } else {
        q
    };
    Some(Extracted {
        summary: format!("Approved: {}", summarize(&what, 0)),
        content: format!("{} — {}", what.trim(), reply.trim()),
        alternatives: alternatives(&what),
        reasoning: None,
        confidence: 0.55,
        status: DecisionStatus::Active,
        rule: "approved_proposal",
    })
}

/// "Yes, go with option 2" after the assistant recommended something: the recommendation is
/// the decision.
fn accepted(reply: &str, proposal: &str) -> Option<Extracted> {
    static APPROVE: OnceLock<Pattern> = OnceLock::new();
    static PROPOSE: OnceLock<Pattern> = OnceLock::new();
    let approve = APPROVE.get_or_init(|| {
        re(r"(?i)^\s*(yes|yep|yeah|ok|okay|sure|agreed|sounds good|looks good|lgtm|perfect|great|do it|go ahead|let'?s do (it|that)|go with (it|that|option \d|the (first|second|third)))\b")
    });
    let propose = PROPOSE.get_or_init(|| {
        re(r"(?i)\b(i'?d recommend|i recommend|i suggest|i'?d suggest|my recommendation|i'?d go with|i would go with|the best option is|i propose|recommended:?|my (?:personal )?pick(?: would be| is)?)\b")
    });
    let reply_words = reply.split_whitespace().count();
    if reply_words > 25 || !approve.is_match(reply) || reply.contains('?') {
        return None;
    }
    let s = sentences(proposal).into_iter().find(|s| propose.is_match(s))?;
    let reasoning = clause_after(&format!(" {s}"), REASON_WORDS).map(str::to_string);
    Some(Extracted {
        summary: format!("Accepted proposal: {}", summarize(&propose.regex().replace(&s, "").replace("  ", " "), 0)),
        content: format!("{s} — {}", reply.trim()),
        alternatives: alternatives(&s),
        reasoning,
        confidence: 0.7,
        status: DecisionStatus::Active,
        rule: "accepted_proposal",
    })
}

/// A short answer to an either/or question ("auto-detect your location, or use a fixed
/// city?" — "yes, it should detect the location"): the answer names one side.
fn answered(reply: &str, proposal: &str) -> Option<Extracted> {
    let reply = reply.trim();
    static UNSURE: OnceLock<Pattern> = OnceLock::new();
    if UNSURE
        .get_or_init(|| re(r"(?i)\b(?:don'?t|dont|do not) know\b|\bnot sure\b|\bno idea\b|不知道|모르|わから"))
        .is_match(reply)
    {
        return None;
    }
    if reply.split_whitespace().count() > 30 || reply.contains(['?', '？']) {
        return None;
    }
    let sents = sentences(proposal);
    let at = sents.iter().rposition(|s| s.contains(['?', '？']))?;
    let question = sents.get(at)?.clone();
    if let Some(d) = declined_first(reply, &sents, at) {
        return Some(d);
    }
    if !question.contains('?') {
        return None;
    }
    let q = question.to_lowercase();
    let (left, right) = q.split_once(" or ")?;
    // The alternatives are the few words either side of "or", not the whole question.
    let left = left.trim_end_matches([',', ' ']);
    let left = left.rsplit([':', ',']).next().unwrap_or(left);
    let left: String = left.split_whitespace().rev().take(4).collect::<Vec<_>>().join(" ");
    let right: String = right.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    let (left, right) = (left.as_str(), right.as_str());
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 4).map(str::to_string).collect()
    };
    let reply_words = words(&reply.to_lowercase());
    let hits = |side: &str| words(side).iter().filter(|w| reply_words.contains(w)).count();
    let (l, r) = (hits(left), hits(right));
    if l == r {
        return None;
    }
    Some(Extracted {
        summary: format!("Chose: {}", summarize(reply, 0)),
        content: format!("{} — {reply}", question.trim()),
        alternatives: Vec::new(),
        reasoning: None,
        confidence: 0.5,
        status: DecisionStatus::Active,
        rule: "answered_either_or",
    })
}

/// "需要我帮你做安全加固吗？还是保持现状就行？" — "不用": declining the first side of an either/or
/// question chooses the second. `at` is the question's sentence among `sents`.
fn declined_first(reply: &str, sents: &[String], at: usize) -> Option<Extracted> {
    static NO: OnceLock<Pattern> = OnceLock::new();
    let no = NO.get_or_init(|| {
        re(r"(?i)^\W*(?:no|nope|nah|no thanks?|no need|不用了?|不需要|不要了?|不必|算了|没必要|아니(?:요)?|아뇨|괜찮아요?|いいえ|大丈夫です|不用谢)\W*$")
    });
    if !no.is_match(reply.trim()) {
        return None;
    }
    let question = sents.get(at)?;
    let lower = question.to_lowercase();
    let trim = |t: &str| t.trim().trim_end_matches(['?', '？', '.', '。']).trim_end_matches("就行").trim().to_string();
    let (first, second) = match lower.strip_prefix("还是").or_else(|| lower.strip_prefix("or ")) {
        // The second side asked as its own sentence, the first just before it.
        Some(rest) if at > 0 && sents.get(at - 1).is_some_and(|p| p.contains(['?', '？'])) => {
            (trim(sents.get(at - 1)?), trim(rest))
        }
        _ => {
            let (l, r) = lower.split_once("还是").or_else(|| lower.split_once(", or "))?;
            (trim(l), trim(r))
        }
    };
    if second.is_empty() || first.is_empty() {
        return None;
    }
    Some(Extracted {
        summary: format!("Chose: {}", summarize(&second, 0)),
        content: format!("{} — {}", question.trim(), reply.trim()),
        alternatives: vec![summarize(&first, 0)],
        reasoning: None,
        confidence: 0.5,
        status: DecisionStatus::Active,
        rule: "answered_either_or",
    })
}

/// Options the assistant laid out as a list: `(label, text)`, label being the bold letter or
/// number the item starts with, if any ("- **B** — a dot below the number").
fn options(proposal: &str) -> Vec<(Option<String>, String)> {
    static ITEM: OnceLock<Pattern> = OnceLock::new();
    static ROW: OnceLock<Pattern> = OnceLock::new();
    static HEAD: OnceLock<Pattern> = OnceLock::new();
    let item = ITEM.get_or_init(|| re(r"^\s*(?:[-*•]|(\d+)[.)])\s+(?:\*\*([A-Za-z0-9]{1,2})\*\*\s*[—:–-]\s*)?(.+)$"));
    // A table row labelled by a letter or number: "| B | WCAG 2.1 Level AA - … |".
    let row = ROW.get_or_init(|| re(r"^\s*\|\s*\**([A-Za-z0-9]{1,2})\**\s*\|\s*([^|]+?)\s*\|"));
    // A heading or bold line naming an option: "### Cách 1: …", "**Option 2 — …**", "方案二：…".
    let head = HEAD.get_or_init(|| {
        re(r"(?i)^\s*(?:#+\s*)?(?:\*\*)?(?:option|cách|方案|案|방법|옵션)\s*([0-9a-d一二三四])\s*(?:\*\*)?\s*[:：—–-]\s*(.+)$")
    });
    let text = code_re().regex().replace_all(proposal, "\n");
    // Options a heading or a table labels win over list items; among list items, the block
    // nearest the question ("Should I update tasks.md to: 1. … 2. …?") wins over earlier lists.
    let mut labelled = Vec::new();
    let mut blocks: Vec<Vec<(Option<String>, String)>> = vec![Vec::new()];
    for l in text.lines() {
        if let Some(c) = head.captures(l) {
            labelled.push((Some(label(&c[1])), c[2].to_string()));
        } else if let Some(c) = row.captures(l) {
            labelled.push((Some(c[1].to_lowercase()), c[2].to_string()));
        } else if let Some(c) = item.captures(l) {
            let label = c.get(2).or_else(|| c.get(1)).map(|m| m.as_str().to_lowercase());
            blocks.last_mut().expect("a block").push((label, c[3].to_string()));
        } else if !l.trim().is_empty()
            && !l.starts_with(char::is_whitespace)
            && !blocks.last().is_some_and(Vec::is_empty)
        {
            blocks.push(Vec::new());
        }
    }
    let clean = |v: Vec<(Option<String>, String)>| -> Vec<(Option<String>, String)> {
        v.into_iter()
            .map(|(label, t)| (label, t.replace("**", "").trim().to_string()))
            .filter(|(label, t)| !t.is_empty() && !t.ends_with('?') && label.as_deref() != Some("option"))
            .collect()
    };
    let labelled = clean(labelled);
    if !labelled.is_empty() {
        return labelled;
    }
    blocks.into_iter().rev().map(clean).find(|b| !b.is_empty()).unwrap_or_default()
}

/// An option's label as replies name it: lower case, Chinese numerals as digits ("二" → "2").
fn label(l: &str) -> String {
    match l {
        "一" => "1".to_string(),
        "二" => "2".to_string(),
        "三" => "3".to_string(),
        "四" => "4".to_string(),
        other => other.to_lowercase(),
    }
}

/// A pick among options the assistant just offered: "C and highlight the number" (a labelled
/// item), "first option sounds easy" (an ordinal), "slant looks the best" or "I like Mission
/// Control" (naming something the assistant wrote about).
fn picked(reply: &str, proposal: &str) -> Option<Extracted> {
    static ORDINAL: OnceLock<Pattern> = OnceLock::new();
    static PREFER: OnceLock<Pattern> = OnceLock::new();
    let reply = reply.trim();
    if reply.split_whitespace().count() > 25 || reply.contains('?') {
        return None;
    }
    static ASKED: OnceLock<Pattern> = OnceLock::new();
    let opts = options(proposal);
    let labelled_options =
        opts.iter().any(|(label, _)| label.as_deref().is_some_and(|l| l.chars().all(char::is_alphabetic)));
    let asked = proposal.contains('?')
        || labelled_options
        || proposal.to_lowercase().contains("reply with")
        || ASKED
            .get_or_init(|| re(r"(?i)\b(?:which|do you prefer|you'?d prefer|would you like|do you want|want me to)\b"))
            .is_match(proposal);
    let ordinal = ORDINAL.get_or_init(|| {
        re(r"(?i)^(?:(?:the|i'?ll take the|go with the|let'?s do the)\s+)?(first|second|third|last|1st|2nd|3rd)\s+(?:one|option|approach)\b|^(?:let'?s (?:try|do|go with|use)\s+)?(?:([a-d])|(?:option|cách|方案|第|방법)?\s*([a-d1-9一二三])(?:\s*(?:번|番|个|個|号|안))?)(?:\s+(?:and|nhé|please)\b|\s*[,.!。]|$)")
    });
    let prefer = PREFER.get_or_init(|| {
        re(r"(?i)^(?:i (?:like|prefer|love)\s+(.{2,40}?)|(.{2,30}?)\s+(?:looks|is|sounds|seems) (?:the )?(?:best|better|great|perfect|right))(?:\s*[,.!]|\s+(?:but|and|for)\b|$)")
    });
    let chosen: String = if let Some(c) = ordinal.captures(reply) {
        if !asked || opts.is_empty() {
            return None;
        }
        let pick = if let Some(w) = c.get(1) {
            match w.as_str().to_lowercase().as_str() {
                "first" | "1st" => opts.first(),
                "second" | "2nd" => opts.get(1),
                "third" | "3rd" => opts.get(2),
                _ => opts.last(),
            }
        } else {
            let key = label(c.get(2).or_else(|| c.get(3))?.as_str());
            opts.iter()
                .find(|(label, _)| label.as_deref() == Some(key.as_str()))
                .or_else(|| key.parse::<usize>().ok().and_then(|n| opts.get(n.wrapping_sub(1))))
        };
        pick?.1.clone()
    } else if let Some(c) = prefer.captures(reply) {
        let named = c.get(1).or_else(|| c.get(2))?.as_str().trim();
        // The named thing must be something the assistant just wrote about.
        if !proposal.to_lowercase().contains(&named.to_lowercase()) || named.split_whitespace().count() > 5 {
            return None;
        }
        named.to_string()
    } else if let Some((_, t)) = (asked && (2..=4).contains(&reply.split_whitespace().count()))
        .then(|| {
            // A reply that repeats the start of an offered option ("10 minutes").
            let said = reply.to_lowercase();
            let said = said.trim_end_matches(['.', '!']);
            opts.iter().find(|(_, t)| t.to_lowercase().starts_with(said))
        })
        .flatten()
    {
        t.clone()
    } else {
        return None;
    };
    let alternatives = opts.iter().map(|(_, t)| t).filter(|t| **t != chosen).take(4).map(|t| summarize(t, 0)).collect();
    Some(Extracted {
        summary: format!("Chose: {}", summarize(&chosen, 0)),
        content: format!("{} — {reply}", chosen.trim()),
        alternatives,
        reasoning: None,
        confidence: 0.6,
        status: DecisionStatus::Active,
        rule: "picked_option",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approved_proposal_is_the_decision_and_an_approved_step_is_not() {
        let d = decided_by_reply("yes", "It has no default binding. Want me to add a keybinding for it?")
            .expect("approved");
        assert_eq!(d.rule, "approved_proposal");
        assert!(d.summary.contains("keybinding"), "{}", d.summary);
        assert!(decided_by_reply("yes", "Tests pass. Want me to push to GitHub now?").is_none());
        assert!(decided_by_reply("why?", "Want me to add a keybinding for it?").is_none());
        let plan = "Changes:\n1. Add a Serial1 pin definition\n2. Route every print through comPrint\n\n진행할까요?";
        let d = decided_by_reply("ㅇㅇ", plan).expect("approved plan");
        assert!(d.summary.contains("Serial1"), "{}", d.summary);
    }

    #[test]
    fn a_reply_that_repeats_the_proposal_approves_it() {
        let d = decided_by_reply("更新配置文件", "我可以帮您把默认模型设为 opus。需要我更新配置文件吗？")
            .expect("approved");
        assert_eq!(d.rule, "approved_proposal");
        assert!(d.summary.contains("配置文件"), "{}", d.summary);
        let d = decided_by_reply("立即切换", "或者我可以帮您更新配置文件，让默认模型改为opus。需要我现在切换吗？")
            .expect("approved");
        assert!(d.summary.contains("opus"), "{}", d.summary);
        // Repeating a step of work runs it; a refusal approves nothing.
        assert!(decided_by_reply("检查下", "都正常。需要我检查其他配置吗？").is_none());
        assert!(decided_by_reply("不要切换", "需要我现在切换吗？").is_none());
    }

    #[test]
    fn declining_the_first_side_of_an_either_or_chooses_the_second() {
        let d = decided_by_reply("不用", "当前配置够用。需要我帮你做安全加固吗？还是保持现状就行？").expect("chose");
        assert_eq!(d.rule, "answered_either_or");
        assert!(d.summary.contains("保持现状"), "{}", d.summary);
        assert!(d.alternatives.iter().any(|a| a.contains("安全加固")), "{:?}", d.alternatives);
        let d = decided_by_reply("no", "Should I add a retry loop, or leave it as it is?").expect("chose");
        assert!(d.summary.to_lowercase().contains("leave it"), "{}", d.summary);
        assert!(decided_by_reply("不用", "需要我帮你做安全加固吗？").is_none());
    }

    #[test]
    fn picks_from_tables_headings_and_numbers() {
        let table =
            "Which level?\n\n| Option | Description |\n|---|---|\n| A | Level A - basic |\n| B | Level AA - standard |";
        assert_eq!(decided_by_reply("B", table).expect("pick").summary, "Chose: Level AA - standard");
        let heads =
            "Two ways:\n### Cách 1: Drop files into data/raw\n### Cách 2: Fill the templates by hand\nWhich one?";
        assert!(decided_by_reply("cách 1", heads).expect("pick").summary.contains("data/raw"));
        let list = "Options:\n1. **Just orange**\n2. **Orange border, cyan inner**\nWant to try any of these?";
        assert!(decided_by_reply("lets try 2", list).expect("pick").summary.contains("cyan"));
        assert!(decided_by_reply("I dont know", "Use option A, or the B module?").is_none());
    }
}
