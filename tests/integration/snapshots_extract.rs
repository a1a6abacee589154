//! Snapshots of the decisions and session summary extracted from five sessions written for this
//! test in the style of real Claude Code transcripts (snapshots of real transcripts would copy
//! their text). Review changes with `INSTA_UPDATE=always cargo nextest run snapshots_extract`.

use convdex::{CollectionOptions, DocBody, DocKind, IndexOptions};

use crate::common::hash_index;

type Script<'a> = &'a [(&'a str, &'a str)];

fn write(dir: &std::path::Path, id: &str, day: u32, script: Script<'_>) {
    let mut out = String::new();
    for (i, (role, text)) in script.iter().enumerate() {
        let ts = format!("2026-02-{day:02}T09:{:02}:00.000Z", i * 3);
        let rec = if *role == "user" {
            serde_json::json!({"type":"user","uuid":format!("{id}-{i}"),"sessionId":id,"cwd":"/home/dev/shop","timestamp":ts,"message":{"role":"user","content":text}})
        } else {
            serde_json::json!({"type":"assistant","uuid":format!("{id}-{i}"),"sessionId":id,"cwd":"/home/dev/shop","timestamp":ts,"message":{"id":format!("{id}-m{i}"),"model":"m","role":"assistant","content":[{"type":"text","text":text}]}})
        };
        out.push_str(&format!("{rec}\n"));
    }
    std::fs::write(dir.join(format!("{id}.jsonl")), out).unwrap();
}

fn render(coll: &convdex::Collection, session: &str) -> String {
    let mut out = String::new();
    for d in coll.session_documents(session).unwrap() {
        match &d.body {
            DocBody::Decision(f) => out.push_str(&format!(
                "decision [{:?} {:.2}] {}\n  alternatives: {:?}\n  reasoning: {:?}\n",
                f.status, f.confidence, f.summary, f.alternatives, f.reasoning
            )),
            DocBody::Summary(f) => out.push_str(&format!(
                "summary: {}\n  topics: {:?}\n  previous: {:?}, next: {:?}\n",
                d.content, f.key_topics, f.previous_session, f.next_session
            )),
            _ => {}
        }
    }
    out
}

#[test]
fn decisions_and_summaries_of_written_sessions() {
    let sessions: [(&str, u32, Script<'_>); 5] = [
        (
            "checkout",
            2,
            &[
                ("user", "The checkout page times out when the cart has more than 50 items."),
                (
                    "assistant",
                    "The cart total is recomputed with one SQL query per item. I'd recommend a single aggregate query because it removes the N+1 pattern.",
                ),
                ("user", "Yes, go with that."),
                ("assistant", "Done: the total now comes from one query and the page loads in 200 ms."),
            ],
        ),
        (
            "payments",
            4,
            &[
                ("user", "We decided to use Stripe instead of PayPal because the webhooks are simpler to verify."),
                ("assistant", "Should we also keep PayPal as a fallback for existing customers?"),
                ("user", "No. We should not use PayPal anywhere in the new flow."),
            ],
        ),
        (
            "search",
            6,
            &[
                ("user", "Product search is too slow with LIKE queries."),
                ("assistant", "We could try trigram indexes or an external engine."),
                (
                    "user",
                    "Let's use Meilisearch rather than Elasticsearch, since we only need typo tolerance and it is one binary.",
                ),
                ("assistant", "Now let's run the indexing job and check the results."),
            ],
        ),
        (
            "cache",
            9,
            &[
                (
                    "user",
                    "We tried caching product pages in Redis but it didn't work, the invalidation was always stale.",
                ),
                ("assistant", "Reverted. Pages are rendered per request again."),
                ("user", "Going forward we cache only the category tree, nothing per product."),
            ],
        ),
        (
            "deploy",
            12,
            &[
                ("user", "Switching from Heroku to Fly.io for the API, the pricing is better for our traffic."),
                ("assistant", "If we move the database too, latency might improve, but that is a bigger change."),
                ("user", "Keep the database where it is for now."),
            ],
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("projects/-home-dev-shop");
    std::fs::create_dir_all(&proj).unwrap();
    for (id, day, script) in sessions {
        write(&proj, id, day, script);
    }
    let data = tempfile::tempdir().unwrap();
    let index = hash_index(data.path(), CollectionOptions::default());
    convdex::index_paths(
        &index,
        &[tmp.path().join("projects")],
        &IndexOptions { tenant: Some("t".into()), ..Default::default() },
    )
    .unwrap();
    let coll = index.collection("t", "shop").unwrap();
    assert_eq!(coll.stats().unwrap().summaries, 5);
    assert!(coll.stats().unwrap().decisions >= 5);
    for (id, _, _) in sessions {
        insta::assert_snapshot!(format!("session_{id}"), render(&coll, id));
    }
    let _ = DocKind::Decision;
}
