//! The team store on a real PostgreSQL 16.2 with pgvector 0.6.2 (PyPI's `pgserver`, started
//! here in a temporary directory by `tests/support/postgres_for_tests.py`; `.ci/run` and
//! `make test` install it): real sessions of `../shared/data/fresh/` indexed with the real
//! model, pushed, searched, pushed again, pushed from two machines at once, killed and
//! resumed, granted, revoked and forgotten. Run in CI always: without `pgserver` this fails.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use convdex::team::{TeamQuery, TeamStore};
use convdex::{Agent, DocKind, Document, Error, Filter, Index, Options, Query, SearchMode};

use super::common::copy_dir;
#[path = "../support/pgserver.rs"]
mod pgserver;
use pgserver::Postgres;

fn sql(url: &str, statements: &str) -> Result<(), postgres::Error> {
    postgres::Client::connect(url, postgres::NoTls)?.batch_execute(statements)
}

fn query(url: &str, q: &str) -> Result<Vec<postgres::Row>, postgres::Error> {
    let mut c = postgres::Client::connect(url, postgres::NoTls)?;
    c.query(q, &[])
}

const PROJECT_DIR: &str = "umaionigiri+claudefiles/projects/-Users-so-MyWorkSpace-scibit-petabit-bpaas";
const PROJECT: &str = "petabit-bpaas";

/// Indexes the real sessions into a fresh data directory (a "machine"); returns it.
fn machine(root: &Path, name: &str) -> PathBuf {
    let projects = root.join(format!("{name}-home/.claude/projects"));
    let fresh = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/fresh/transcripts");
    copy_dir(&fresh.join(PROJECT_DIR), &projects.join(PROJECT_DIR.rsplit('/').next().unwrap()));
    let data = root.join(format!("{name}-data"));
    let out = convdex(&data, &["index", projects.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    data
}

fn convdex(data: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_convdex"));
    c.env("CONVDEX_WARM", "off").arg("--data-dir").arg(data).args(args);
    c
}

/// Every document of a project in the team store: id → hash.
fn held(url: &str, tenant: &str, project: &str) -> BTreeMap<String, String> {
    let table = format!("\"cdx_{tenant}\".\"d_{project}\"");
    query(url, &format!("SELECT id::text, hash FROM {table}"))
        .map(|rows| rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, String>(1))).collect())
        .unwrap_or_default()
}

fn push_json(data: &Path, url: &str) -> serde_json::Value {
    let out = convdex(data, &["push", "--team", url, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_team_store_on_real_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let pg = Postgres::start(tmp.path());
    let a = machine(tmp.path(), "a");

    // A push sends every document, with vectors; a second sends nothing.
    let first = push_json(&a, &pg.url);
    // A project whose folder was not recorded (pushed by a build before 2026-11-28) gets it at
    // its next push.
    let folder = |url: &str| -> Option<String> {
        query(url, &format!("SELECT path FROM cdx_local.projects WHERE project = '{PROJECT}'")).unwrap()[0].get(0)
    };
    let recorded = folder(&pg.url);
    assert!(recorded.is_some(), "the first push records the project's folder");
    sql(&pg.url, "UPDATE cdx_local.projects SET path = NULL").unwrap();
    let again = push_json(&a, &pg.url);
    assert_eq!(folder(&pg.url), recorded, "the next push records it again");
    let index = Index::open(&a, Options::default()).unwrap();
    let coll = index.collection("local", PROJECT).unwrap();
    let local = coll.documents_with_vectors().unwrap();
    assert_eq!(first["sent"].as_u64().unwrap() as usize, local.len(), "{first}");
    let uninterrupted = held(&pg.url, "local", PROJECT);
    assert_eq!(uninterrupted.len(), local.len());
    assert_eq!((again["sent"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(local.len() as u64)), "{again}");

    // Search: a decision asked for in its own words comes first, by meaning, by words and both;
    // every filter holds.
    let store = TeamStore::connect(&pg.url).unwrap();
    let embedder = index.embedder().unwrap();
    let glossary = index.options().collection.glossary.clone();
    let decision =
        local.iter().find(|(d, v)| d.kind() == DocKind::Decision && !v.is_empty()).expect("a decision").0.clone();
    for mode in [SearchMode::Hybrid, SearchMode::Semantic, SearchMode::Lexical] {
        let mut q = TeamQuery::new(&decision.content);
        q.mode = mode;
        let hits = store.search(&q, Some(embedder.as_ref()), &glossary).unwrap();
        assert!(
            hits.iter().take(3).any(|h| h.doc.id == decision.id),
            "{mode:?}: {:?}",
            hits.first().map(|h| &h.doc.id)
        );
    }
    let mut q = TeamQuery::new(&decision.content);
    q.filter.kinds = vec![DocKind::Message];
    q.filter.sessions = vec![decision.session_id[..8].to_string()]; // the start of its id
    let hits = store.search(&q, Some(embedder.as_ref()), &glossary).unwrap();
    assert!(
        !hits.is_empty()
            && hits.iter().all(|h| h.doc.kind() == DocKind::Message && h.doc.session_id == decision.session_id)
    );
    // The same question locally and in the team store: the same first session.
    let local_first = coll.search(&decision.content).limit(1).run().unwrap().hits[0].doc.session_id.clone();
    let team_first = store.search(&TeamQuery::new(&decision.content), Some(embedder.as_ref()), &glossary).unwrap()[0]
        .doc
        .session_id
        .clone();
    assert_eq!(local_first, team_first);
    // The command line opens the collections itself.
    drop((coll, index));
    // From the command line too.
    let out = convdex(&a, &["search", "--team", &pg.url, "--json", &decision.content]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!cli.as_array().unwrap().is_empty());

    // The MCP server's search asks the team store when told to.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let answer = rt.block_on(async {
        use rmcp::ServiceExt;
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_convdex"))
            .env("CONVDEX_WARM", "off")
            .env("CONVDEX_TEAM_URL", &pg.url)
            .arg("--data-dir")
            .arg(tmp.path().join("empty-data"))
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let client = ().serve((stdout, stdin)).await.expect("initialize");
        let serde_json::Value::Object(args) = serde_json::json!({"query": decision.content, "team": true}) else {
            unreachable!()
        };
        let r = client.call_tool(rmcp::model::CallToolRequestParams::new("search").with_arguments(args)).await.unwrap();
        let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        client.cancel().await.unwrap();
        let _ = child.wait().await;
        text
    });
    assert!(answer.contains("in the team store") && answer.contains(&decision.session_id[..8]), "{answer}");

    // Two machines push the same project at once into a fresh database: each document once.
    sql(&pg.url, "CREATE DATABASE two").unwrap();
    sql(&pg.as_user("postgres", "two"), "CREATE EXTENSION vector").unwrap();
    let b = machine(tmp.path(), "b");
    let two = pg.as_user("postgres", "two");
    let pushes: Vec<_> =
        [&a, &b].iter().map(|d| convdex(d, &["push", "--team", &two, "--json"]).spawn().unwrap()).collect();
    for mut p in pushes {
        assert!(p.wait().unwrap().success());
    }
    let both = held(&two, "local", PROJECT);
    assert!(both.keys().eq(uninterrupted.keys()), "two machines at once: each document once");

    // A push killed at several points (after its first, a middle and a late batch committed)
    // and resumed ends identical to an uninterrupted one.
    let total = uninterrupted.len();
    let mut partial = 0;
    for (i, fraction) in [0.0f64, 0.4, 0.8].iter().enumerate() {
        let db = format!("killed{i}");
        sql(&pg.url, &format!("CREATE DATABASE {db}")).unwrap();
        let url = pg.as_user("postgres", &db);
        sql(&url, "CREATE EXTENSION vector").unwrap();
        let mut p = convdex(&a, &["push", "--team", &url, "--batch", "3"]).stdout(Stdio::null()).spawn().unwrap();
        let at = ((total as f64 * fraction) as usize).max(1);
        loop {
            let n = held(&url, "local", PROJECT).len();
            if n >= at || p.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = p.kill();
        let _ = p.wait();
        let kept = held(&url, "local", PROJECT).len();
        if kept < total {
            partial += 1;
        }
        push_json(&a, &url);
        assert_eq!(held(&url, "local", PROJECT), uninterrupted, "killed with {kept} of {total} sent, then resumed");
    }
    assert!(partial > 0, "no push was killed before its end: the kills tested nothing");

    // A pull mirrors the team's documents for working offline, searchable there; a second
    // writes nothing.
    let mirror = tmp.path().join("mirror");
    let pull = |data: &Path| -> serde_json::Value {
        let out = convdex(data, &["pull", "--team", &pg.url, "--mirror", mirror.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let pulled = pull(&b);
    assert_eq!(pulled["written"].as_u64().unwrap() as usize, total, "{pulled}");
    let again = pull(&b);
    assert_eq!((again["written"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(total as u64)), "{again}");
    let out = convdex(&mirror, &["search", "--json", &decision.content]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&decision.session_id), "the mirror answers offline");

    // Who sees what: bob has no grant, alice has the project; revoked, she reads nothing. A
    // second project of the tenant, which nobody is granted, shares its catalog tables.
    let secret = tmp.path().join("secret");
    let other =
        Index::open(&secret, Options::default().embedder(std::sync::Arc::new(convdex::HashEmbedder::new(64)))).unwrap();
    let hidden = Document::message("s-hidden", "u-hidden", 0, convdex::Role::User, "the launch checklist lives here");
    other.collection("local", "secret-project").unwrap().add(std::slice::from_ref(&hidden)).unwrap();
    // As in a store made before 2026-11-29 (no policies, no table names in the catalog): the
    // push that creates a project secures the catalog and names every project's table.
    sql(
        &pg.url,
        "DROP POLICY granted ON cdx_local.projects; DROP POLICY granted ON cdx_local.models;
         DROP POLICY granted ON cdx_local.forgotten; UPDATE cdx_local.projects SET docs = NULL;",
    )
    .unwrap();
    TeamStore::connect(&pg.url).unwrap().push(&other, None).unwrap();
    let unnamed: i64 = query(&pg.url, "SELECT count(*) FROM cdx_local.projects WHERE docs IS NULL").unwrap()[0].get(0);
    assert_eq!(unnamed, 0, "every project's table named");
    sql(&pg.url, "CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN").unwrap();
    let status = convdex(&a, &["team", "--team", &pg.url, "grant", "alice", "--tenant", "local", "--project", PROJECT])
        .status()
        .unwrap();
    assert!(status.success());
    let (alice, bob) = (pg.as_user("alice", "postgres"), pg.as_user("bob", "postgres"));
    let table = format!("\"cdx_local\".\"d_{PROJECT}\"");
    let denied = query(&bob, &format!("SELECT count(*) FROM {table}")).unwrap_err();
    assert_eq!(denied.code(), Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE), "{denied}");
    assert!(TeamStore::connect(&bob).unwrap().projects().unwrap().is_empty());
    let as_alice = TeamStore::connect(&alice).unwrap();
    assert_eq!(as_alice.projects().unwrap(), vec![("local".to_string(), PROJECT.to_string())]);
    assert!(
        !as_alice.search(&TeamQuery::new(&decision.content), Some(embedder.as_ref()), &glossary).unwrap().is_empty()
    );
    let n: i64 = query(&alice, &format!("SELECT count(*) FROM {table}")).unwrap()[0].get(0);
    assert_eq!(n as usize, local.len());
    // The shared tables, through SQL: alice sees her project's rows only (row-level security),
    // may not leave a tombstone in the other project, and the owner sees both.
    let column = |url: &str, q: &str| -> Vec<String> { query(url, q).unwrap().iter().map(|r| r.get(0)).collect() };
    assert_eq!(column(&alice, "SELECT project FROM cdx_local.projects"), [PROJECT]);
    assert_eq!(column(&alice, "SELECT DISTINCT project FROM cdx_local.models"), [PROJECT]);
    let tombstone =
        sql(&alice, "INSERT INTO cdx_local.forgotten (project, session_id) VALUES ('secret-project', 's-hidden')")
            .unwrap_err();
    assert_eq!(tombstone.code(), Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE), "{tombstone}");
    assert_eq!(column(&pg.url, "SELECT project FROM cdx_local.projects ORDER BY project"), [PROJECT, "secret-project"]);
    assert!(
        as_alice
            .search(&TeamQuery::new(&hidden.content), None, &glossary)
            .unwrap()
            .iter()
            .all(|h| h.project == PROJECT)
    );
    // A member granted the whole tenant writes every project's tables but not the catalog.
    let owner = TeamStore::connect(&pg.url).unwrap();
    owner.grant("bob", "local", None).unwrap();
    assert_eq!(column(&bob, "SELECT project FROM cdx_local.projects ORDER BY project"), [PROJECT, "secret-project"]);
    let repointed = sql(&bob, "UPDATE cdx_local.projects SET docs = NULL").unwrap_err();
    assert_eq!(repointed.code(), Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE), "{repointed}");
    owner.revoke("bob", "local", None).unwrap();
    assert!(TeamStore::connect(&bob).unwrap().projects().unwrap().is_empty());
    // The second project leaves the store (its tables and catalog rows), as an owner would drop it.
    sql(
        &pg.url,
        "DO $$ DECLARE t text; BEGIN
             FOR t IN SELECT format('cdx_local.%I', tablename) FROM pg_tables
                 WHERE schemaname = 'cdx_local' AND tablename LIKE 'v\\_secret-project/%' LOOP
                 EXECUTE 'DROP TABLE ' || t;
             END LOOP; END $$;
         DROP TABLE cdx_local.\"d_secret-project\";
         DELETE FROM cdx_local.models WHERE project = 'secret-project';
         DELETE FROM cdx_local.projects WHERE project = 'secret-project';",
    )
    .unwrap();
    let index = Index::open(&a, Options::default()).unwrap();
    as_alice.push(&index, Some(PROJECT)).unwrap(); // a member writes what she was granted
    drop(index);
    TeamStore::connect(&pg.url).unwrap().revoke("alice", "local", Some(PROJECT)).unwrap();
    assert!(query(&alice, &format!("SELECT count(*) FROM {table}")).is_err());

    // Forgotten for everyone: gone, and no machine pushes it again.
    let session = decision.session_id.clone();
    let out = convdex(
        &a,
        &["team", "--team", &pg.url, "forget", "--tenant", "local", "--project", PROJECT, "--session", &session],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let count = |url: &str| -> i64 {
        query(url, &format!("SELECT count(*) FROM {table} WHERE session_id = '{session}'")).unwrap()[0].get(0)
    };
    assert_eq!(count(&pg.url), 0);
    let after = push_json(&b, &pg.url);
    assert!(after["forgotten"].as_u64().unwrap() > 0, "{after}");
    assert_eq!(count(&pg.url), 0, "a forgotten session never comes back");
    // The next pull takes it out of the mirror too: a forget reaches every copy.
    let pulled = pull(&b);
    assert!(pulled["removed"].as_u64().unwrap() > 0, "{pulled}");
    let mirrored = Index::open(&mirror, Options::default()).unwrap();
    assert!(mirrored.collection("local", PROJECT).unwrap().session_documents(&session).unwrap().is_empty());
    drop(mirrored);
    // `convdex forget --team` forgets here and for everyone.
    let other = local.iter().map(|(d, _)| d.session_id.clone()).find(|s| *s != session).expect("a second session");
    let out = convdex(&b, &["forget", "--session", &other, "--team", &pg.url, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["team_deleted"].as_u64().unwrap() > 0, "{v}");
    let left: i64 =
        query(&pg.url, &format!("SELECT count(*) FROM {table} WHERE session_id = '{other}'")).unwrap()[0].get(0);
    assert_eq!(left, 0);
    // A character PostgreSQL cannot hold (U+0000) fails nothing: it arrives as U+FFFD.
    let nul = Document::message("nul-session", "nul-message", 0, convdex::Role::User, "a log line\0with a NUL");
    let index = Index::open(&a, Options::default()).unwrap();
    let coll = index.collection("local", PROJECT).unwrap();
    coll.add(std::slice::from_ref(&nul)).unwrap();
    let report = store.push(&index, Some(PROJECT)).unwrap();
    assert_eq!(report.sent, 1, "{report:?}");
    let nul_table = format!("\"cdx_local\".\"d_{PROJECT}\"");
    let arrived =
        query(&pg.url, &format!("SELECT content, doc->>'content' FROM {nul_table} WHERE id = '{}'", nul.id)).unwrap();
    let arrived: (String, String) = (arrived[0].get(0), arrived[0].get(1));
    assert_eq!(arrived, ("a log line\u{FFFD}with a NUL".to_string(), "a log line\u{FFFD}with a NUL".to_string()));
}

/// Whether `filter` admits `doc`, written from [`Filter`]'s documentation alone: what both
/// stores are checked against.
fn admits(f: &Filter, d: &Document) -> bool {
    let files: Vec<&str> = d.files_discussed.iter().map(|x| x.path.as_str()).collect();
    (f.kinds.is_empty() || f.kinds.contains(&d.kind()))
        && (f.tags_any.is_empty() || f.tags_any.iter().any(|t| d.tags.contains(t)))
        && f.tags_all.iter().all(|t| d.tags.contains(t))
        && f.domain.as_ref().is_none_or(|x| d.domain.as_ref() == Some(x))
        && (f.sessions.is_empty() || f.sessions.contains(&d.session_id))
        && (f.files.is_empty() || files.iter().any(|x| f.files.iter().any(|y| y == x)))
        && f.file_prefix.as_ref().is_none_or(|p| files.iter().any(|x| x.starts_with(p.as_str())))
        && (f.agents.is_empty() || f.agents.iter().any(|a| d.agent() == Some(a.as_str())))
        && f.since.is_none_or(|t| d.timestamp >= t)
        && f.until.is_none_or(|t| d.timestamp <= t)
}

/// One matrix of the public search API over both stores: every field of [`Filter`] (and three
/// together) in every mode, asked of the embedded store (`Collection::query`) and of the team
/// store (`TeamStore::search` with `TeamQuery::of` the same query). Each store returns only
/// documents the filter admits; by meaning with a filter, the team store returns every admitted
/// document that has a vector and the embedded store none other; by words (translation off: the
/// team store does not translate) every document the embedded store finds the team store finds
/// too (one analyser); a decision asked in its own words is among the first three of both
/// wherever the filter admits it; and both refuse the same invalid queries with the same typed
/// errors.
#[test]
fn one_api_matrix_over_both_stores() {
    let tmp = tempfile::tempdir().unwrap();
    let pg = Postgres::start(tmp.path());
    let data = machine(tmp.path(), "m");
    push_json(&data, &pg.url);
    let index = Index::open(&data, Options::default()).unwrap();
    let coll = index.collection("local", PROJECT).unwrap();
    let docs: Vec<(Document, bool)> =
        coll.documents_with_vectors().unwrap().into_iter().map(|(d, v)| (d, !v.is_empty())).collect();
    let store = TeamStore::connect(&pg.url).unwrap();
    let embedder = index.embedder().unwrap();
    let glossary = index.options().collection.glossary.clone();

    // Filters drawn from the documents themselves.
    let decision = docs.iter().find(|(d, v)| d.kind() == DocKind::Decision && *v).expect("a decision").0.clone();
    let session = decision.session_id.clone();
    // The decision, or a message of its session with the same words (a search folds identical
    // content of one session into one hit, whichever kind comes first).
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let answers: HashSet<uuid::Uuid> = docs
        .iter()
        .filter(|(d, _)| d.session_id == session && words(&d.content) == words(&decision.content))
        .map(|(d, _)| d.id)
        .collect();
    let by_id: std::collections::HashMap<uuid::Uuid, &Document> = docs.iter().map(|(d, _)| (d.id, d)).collect();
    let file = docs.iter().find_map(|(d, _)| d.files_discussed.first().map(|f| f.path.clone())).expect("a file");
    let tag = docs.iter().flat_map(|(d, _)| &d.tags).find(|t| !t.starts_with("source:")).expect("a tag").clone();
    let two_tags = docs.iter().find(|(d, _)| d.tags.len() >= 2).map(|(d, _)| d.tags[..2].to_vec()).expect("two tags");
    let mut times: Vec<_> = docs.iter().filter(|(d, _)| d.session_id == session).map(|(d, _)| d.timestamp).collect();
    times.sort();
    let middle = times[times.len() / 2];
    let f = Filter::default;
    let mut cases: Vec<(&str, Filter)> = vec![
        ("no filter", f()),
        ("type decision", Filter { kinds: vec![DocKind::Decision], ..f() }),
        ("types message and summary", Filter { kinds: vec![DocKind::Message, DocKind::Summary], ..f() }),
        ("a tag", Filter { tags_any: vec![tag], ..f() }),
        ("two tags, both", Filter { tags_all: two_tags, ..f() }),
        ("one session", Filter { sessions: vec![session.clone()], ..f() }),
        ("a file", Filter { files: vec![file.clone()], ..f() }),
        ("an agent", Filter { agents: vec![Agent::ClaudeCode], ..f() }),
        ("since", Filter { since: Some(middle), ..f() }),
        ("until", Filter { until: Some(middle), ..f() }),
        (
            "type, session and since",
            Filter { kinds: vec![DocKind::Message], sessions: vec![session.clone()], since: Some(middle), ..f() },
        ),
    ];
    if let Some((dir, _)) = file.rsplit_once('/') {
        cases.push(("a directory", Filter { file_prefix: Some(format!("{dir}/")), ..f() }));
    }
    if let Some(domain) = docs.iter().find_map(|(d, _)| d.domain.clone()) {
        cases.push(("a domain", Filter { domain: Some(domain), ..f() }));
    }
    // Both stores fold identical content of one session into one hit (whichever of the copies
    // ranks first): documents compare by session and content.
    let folded = |ids: &mut dyn Iterator<Item = &uuid::Uuid>| -> HashSet<(String, String)> {
        ids.map(|i| &by_id[i]).map(|d| (d.session_id.clone(), words(&d.content))).collect()
    };
    for (name, filter) in &cases {
        let admitted: HashSet<uuid::Uuid> = docs.iter().filter(|(d, _)| admits(filter, d)).map(|(d, _)| d.id).collect();
        let with_vectors: HashSet<uuid::Uuid> =
            docs.iter().filter(|(d, v)| *v && admitted.contains(&d.id)).map(|(d, _)| d.id).collect();
        assert!(
            !with_vectors.is_empty(),
            "{name}: the filter admits no document with a vector; the case tests nothing"
        );
        // (This project is Claude Code's alone: its agent admits every document, and Codex none, below.)
        assert!(
            filter.is_empty() || !filter.agents.is_empty() || admitted.len() < docs.len(),
            "{name}: the filter admits every document"
        );
        eprintln!("{name}: {} of {} documents admitted", admitted.len(), docs.len());
        for mode in [SearchMode::Semantic, SearchMode::Lexical, SearchMode::Hybrid] {
            let mut q = Query::new(decision.content.clone());
            q.filter = filter.clone();
            q.mode = Some(mode);
            q.limit = 1000;
            q.ranking.translation = 0.0;
            q.ranking.gloss = 0.0;
            let embedded: Vec<uuid::Uuid> = coll.query(&q).unwrap().hits.iter().map(|h| h.doc.id).collect();
            let team: Vec<uuid::Uuid> = store
                .search(&TeamQuery::of(&q), Some(embedder.as_ref()), &glossary)
                .unwrap()
                .iter()
                .map(|h| h.doc.id)
                .collect();
            for (which, ids) in [("embedded", &embedded), ("team", &team)] {
                assert!(!ids.is_empty(), "{name}, {mode:?}: the {which} store found nothing");
                let outside = ids.iter().filter(|i| !admitted.contains(i)).count();
                assert_eq!(
                    outside, 0,
                    "{name}, {mode:?}: the {which} store returned documents the filter does not admit"
                );
                if answers.iter().any(|a| admitted.contains(a)) && mode != SearchMode::Lexical {
                    assert!(
                        ids.iter().take(3).any(|i| answers.contains(i)),
                        "{name}, {mode:?}: the decision asked in its own words is not among the {which} store's first three"
                    );
                }
            }
            let team_set = folded(&mut team.iter());
            let missing = folded(&mut embedded.iter()).difference(&team_set).count();
            if mode == SearchMode::Semantic && !filter.is_empty() {
                assert_eq!(
                    team_set,
                    folded(&mut with_vectors.iter()),
                    "{name}: by meaning the team store returns every admitted document"
                );
            }
            if mode != SearchMode::Hybrid {
                assert_eq!(
                    missing, 0,
                    "{name}, {mode:?}: the embedded store found {missing} documents the team store did not"
                );
            }
        }
    }

    // A filter that says where the answer lies (here a session, whose candidates keep their
    // neighbours: a file filter's lose them, and their context lift with them) reads its hits
    // higher than the same documents read in the unfiltered search, in each store
    // (docs/ranking.md, «Relevance under a filter»): the team store counts what the filter
    // lets through, as the embedded store does (their readings are not compared: their word
    // scores differ).
    {
        let (name, filter) = ("one session", Filter { sessions: vec![session.clone()], ..f() });
        let ask = |filter: &Filter| {
            let mut q = Query::new(decision.content.clone());
            q.filter = filter.clone();
            q.mode = Some(SearchMode::Hybrid);
            q.limit = 1000;
            q
        };
        let local = |q: &Query| -> Vec<(uuid::Uuid, u8)> {
            coll.query(q).unwrap().hits.iter().map(|h| (h.doc.id, h.relevance)).collect()
        };
        let team = |q: &Query| -> Vec<(uuid::Uuid, u8)> {
            let found = store.search(&TeamQuery::of(q), Some(embedder.as_ref()), &glossary).unwrap();
            found.iter().map(|h| (h.doc.id, h.relevance)).collect()
        };
        for (which, search) in [("embedded", &local as &dyn Fn(&Query) -> Vec<(uuid::Uuid, u8)>), ("team", &team)] {
            let (narrowed, whole) = (search(&ask(&filter)), search(&ask(&f())));
            let (first, read) = narrowed[0];
            let before = whole.iter().find(|(id, _)| *id == first).map(|x| x.1);
            assert!(
                before.is_some_and(|b| read > b),
                "{name}: the {which} store reads its first hit {read} under the filter, {before:?} without"
            );
        }
    }

    // What the local index requires by words (a path, whose parts must stand in order; a quoted
    // phrase), the team store requires too: by words, both find the same documents.
    let phrase = format!("\"{}\"", decision.content.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    assert_eq!(convdex::lexical::LexicalQuery::parse(&phrase).phrases.len(), 1, "{phrase}: one phrase of words");
    for question in [file.clone(), phrase] {
        let mut q = Query::new(question.clone());
        q.mode = Some(SearchMode::Lexical);
        q.limit = 1000;
        q.ranking.translation = 0.0;
        let embedded = folded(&mut coll.query(&q).unwrap().hits.iter().map(|h| &h.doc.id));
        let team = folded(&mut store.search(&TeamQuery::of(&q), None, &glossary).unwrap().iter().map(|h| &h.doc.id));
        assert!(!embedded.is_empty(), "{question}: the embedded store found nothing; the case tests nothing");
        let all = folded(&mut docs.iter().map(|(d, _)| &d.id));
        assert!(embedded.len() < all.len(), "{question}: every document matched; the case tests nothing");
        assert_eq!(team, embedded, "{question}: by words, the team store's documents are the embedded store's");
    }

    // A filter that admits nothing: nothing from either store.
    let mut q = Query::new(decision.content.clone());
    q.filter = Filter { agents: vec![Agent::Codex], ..f() };
    assert!(coll.query(&q).unwrap().hits.is_empty());
    assert!(store.search(&TeamQuery::of(&q), Some(embedder.as_ref()), &glossary).unwrap().is_empty());

    // The same invalid queries, the same typed errors.
    let mut empty = Query::new("   ");
    empty.mode = Some(SearchMode::Lexical);
    let mut inverted = Query::new("x");
    inverted.filter = Filter { since: Some(middle), until: Some(middle - chrono::Duration::days(1)), ..f() };
    let mut zero = Query::new("x");
    zero.limit = 0;
    for (name, q) in [("empty question", empty), ("inverted time range", inverted), ("limit 0", zero)] {
        let local = coll.query(&q).unwrap_err();
        let team = store.search(&TeamQuery::of(&q), Some(embedder.as_ref()), &glossary).unwrap_err();
        assert_eq!(
            std::mem::discriminant(&local),
            std::mem::discriminant(&team),
            "{name}: embedded `{local}`, team `{team}`"
        );
        assert!(!matches!(team, Error::Team { .. }), "{name}: {team}");
    }
}

/// The team store glosses and translates a question as a local search does: over a project
/// written partly in Chinese and an English one, every document's cosine in the team store is
/// the one the local search across projects reads (an English question's second vector, glossed
/// into the languages the project is written in; a Chinese question's glossed vector), and a
/// Korean question by words finds, through its translations, the documents the local search
/// finds, and none without them.
#[test]
fn the_team_store_glosses_and_translates_as_the_local_search_does() {
    let tmp = tempfile::tempdir().unwrap();
    let pg = Postgres::start(tmp.path());
    let index = Index::open(tmp.path().join("data"), Options::default()).unwrap();
    let message = |i: usize, text: &str| Document::message("s", &format!("m{i}"), i as u64, convdex::Role::User, text);
    let (zh_answer, en_answer) = ("数据库迁移到新的分支", "migrate the database to the new branch tonight");
    let filler = [
        "天气不错，我们下午去公园散步",
        "把图片压缩以后再上传",
        "会议改到明天上午十点",
        "这个按钮的颜色太浅了",
        "打印机又卡纸了",
        "the weather is nice today",
        "resize the images before the upload",
    ];
    let mut mixed: Vec<Document> = filler.iter().enumerate().map(|(i, t)| message(i, t)).collect();
    mixed.extend([message(10, zh_answer), message(11, en_answer)]);
    index.collection("local", "混合").unwrap().add(&mixed).unwrap();
    let english: Vec<Document> = ["migrate the database to the new branch", "the printer jammed again", "nice weather"]
        .iter()
        .enumerate()
        .map(|(i, t)| message(i, t))
        .collect();
    index.collection("local", "english").unwrap().add(&english).unwrap();
    let store = TeamStore::connect(&pg.url).unwrap();
    store.init().unwrap();
    store.push(&index, None).unwrap();
    let embedder = index.embedder().unwrap();
    let glossary = index.options().collection.glossary.clone();
    let ask = |text: &str, mode: SearchMode, gloss: f32, translation: f32| {
        let mut q = Query::new(text);
        (q.mode, q.limit, q.ranking.gloss, q.ranking.translation) = (Some(mode), 30, gloss, translation);
        let local = index.search(None, &q).unwrap();
        assert!(local.skipped.is_empty());
        (local.found, store.search(&TeamQuery::of(&q), Some(embedder.as_ref()), &glossary).unwrap())
    };

    // By meaning: the same cosine for every document, glossed or not.
    let similarity = |hits: &[convdex::team::TeamHit], content: &str| {
        hits.iter().find(|h| h.project == "混合" && h.doc.content == content).and_then(|h| h.similarity).unwrap()
    };
    for q in ["migrate the database to the new branch", "数据库迁移"] {
        for gloss in [0.0, 1.0] {
            let (local, team) = ask(q, SearchMode::Semantic, gloss, 1.0);
            assert_eq!(team.len(), local.len(), "{q}: every document of both projects");
            for h in &team {
                let l = local.iter().find(|p| p.project == h.project && p.hit.doc.id == h.doc.id).unwrap();
                let (x, y) = (h.similarity.unwrap(), l.hit.signals.semantic.unwrap());
                assert!((x - y).abs() < 1e-4, "{q}, gloss {gloss}, {}: team {x}, local {y}", h.doc.content);
            }
        }
    }
    let english_q = "migrate the database to the new branch";
    let (own, glossed) =
        (ask(english_q, SearchMode::Semantic, 0.0, 1.0).1, ask(english_q, SearchMode::Semantic, 1.0, 1.0).1);
    assert!(similarity(&glossed, zh_answer) > similarity(&own, zh_answer), "the Chinese answer rises with the glosses");
    assert!(
        (similarity(&glossed, en_answer) - similarity(&own, en_answer)).abs() < 1e-4,
        "the English one keeps its cosine"
    );

    // By words: a Korean question finds through its translations what the local search finds.
    let ids = |hits: Vec<(String, uuid::Uuid)>| hits.into_iter().collect::<HashSet<_>>();
    let korean = "데이터베이스 마이그레이션";
    let (local, team) = ask(korean, SearchMode::Lexical, 1.0, 1.0);
    let found = ids(team.iter().map(|h| (h.project.clone(), h.doc.id)).collect());
    assert_eq!(found, ids(local.iter().map(|p| (p.project.clone(), p.hit.doc.id)).collect()));
    for answer in [zh_answer, en_answer] {
        assert!(team.iter().any(|h| h.doc.content == answer), "{answer} found through a translation");
    }
    assert!(team.iter().any(|h| h.project == "english"), "in the English project too");
    let (local, team) = ask(korean, SearchMode::Lexical, 1.0, 0.0);
    assert!(local.is_empty() && team.is_empty(), "without translation the Korean words are nowhere");

    // A large project's word statistics come from a sample (every project counts as large
    // here): on a project this small the sample is the whole table, so the same hits, scored
    // the same.
    let planned: f64 =
        query(&pg.url, "SELECT reltuples::float8 FROM pg_class WHERE relname = 'd_混合'").unwrap()[0].get(0);
    assert_eq!(planned, mixed.len() as f64, "the push refreshed the planner's statistics");
    let sampled = TeamStore::connect(&pg.url).unwrap().with_exact_up_to(0);
    for (text, mode) in [(korean, SearchMode::Lexical), (english_q, SearchMode::Hybrid)] {
        let q = TeamQuery { limit: 30, mode, ..TeamQuery::new(text) };
        let exact = store.search(&q, Some(embedder.as_ref()), &glossary).unwrap();
        let from_sample = sampled.search(&q, Some(embedder.as_ref()), &glossary).unwrap();
        let scored = |hits: &[convdex::team::TeamHit]| -> Vec<(uuid::Uuid, Option<i64>)> {
            hits.iter().map(|h| (h.doc.id, h.words.map(|w| (w * 1e4).round() as i64))).collect()
        };
        assert!(!exact.is_empty());
        assert_eq!(scored(&from_sample), scored(&exact), "{text}");
    }

    // The projects of a search are asked on several connections at once (the default) or in
    // turn on the store's own: the same hits in the same order, scored the same.
    let in_turn = TeamStore::connect(&pg.url).unwrap().with_readers(1);
    let seen = |hits: Vec<convdex::team::TeamHit>| -> Vec<(String, uuid::Uuid, i64)> {
        hits.into_iter().map(|h| (h.project, h.doc.id, (h.score * 1e4).round() as i64)).collect()
    };
    for (text, mode) in
        [(korean, SearchMode::Lexical), (english_q, SearchMode::Hybrid), ("数据库迁移", SearchMode::Semantic)]
    {
        let q = TeamQuery { limit: 30, mode, ..TeamQuery::new(text) };
        let at_once = seen(store.search(&q, Some(embedder.as_ref()), &glossary).unwrap());
        assert!(at_once.iter().any(|h| h.0 == "english") && at_once.iter().any(|h| h.0 == "混合"), "{text}");
        assert_eq!(at_once, seen(in_turn.search(&q, Some(embedder.as_ref()), &glossary).unwrap()), "{text}");
    }
    // Reading connections are named, at most `with_readers` of them; those that died meanwhile
    // (a restarted server, an idle timeout) are replaced and the search answers as before.
    let name = convdex::team::READER_NAME;
    let open: i64 = query(&pg.url, &format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}'"))
        .unwrap()[0]
        .get(0);
    assert!((1..=convdex::team::TEAM_READERS as i64).contains(&open), "{open} reading connections");
    sql(&pg.url, &format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{name}'"))
        .unwrap();
    let q = TeamQuery { limit: 30, mode: SearchMode::Hybrid, ..TeamQuery::new(english_q) };
    let after = seen(store.search(&q, Some(embedder.as_ref()), &glossary).unwrap());
    assert_eq!(after, seen(in_turn.search(&q, Some(embedder.as_ref()), &glossary).unwrap()));
}

/// A first push of many documents into an empty project loads them, then builds the vector
/// index once; a push cut short leaves it out, a member who may not build it is told, and the
/// owner's next push builds it. Searches answer throughout.
#[test]
fn a_first_large_push_loads_then_builds_the_vector_index() {
    use convdex::team::BULK_FROM;
    use convdex::{HashEmbedder, Role};
    let tmp = tempfile::tempdir().unwrap();
    let pg = Postgres::start(tmp.path());
    let embedder = std::sync::Arc::new(HashEmbedder::new(64));
    let index = Index::open(tmp.path().join("data"), Options::default().embedder(embedder.clone())).unwrap();
    // Varied texts in four scripts, each its own (its number among its words).
    let vocabulary = [
        "部署",
        "缓存",
        "迁移",
        "認証",
        "設定",
        "テスト",
        "데이터베이스",
        "배포",
        "로그",
        "redis",
        "postgres",
        "retry",
        "timeout",
        "flaky",
        "rollback",
        "schema",
        "índice",
        "décision",
        "Zürich",
        "queue",
    ];
    let n = BULK_FROM + 200;
    let text = |i: usize| -> String {
        let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut words: Vec<String> = (0..8)
            .map(|_| {
                x ^= x >> 29;
                x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
                vocabulary[(x % vocabulary.len() as u64) as usize].to_string()
            })
            .collect();
        words.push(format!("항목-{i}"));
        words.join(" ")
    };
    for project in ["큰-project", "second"] {
        let coll = index.collection("bulk", project).unwrap();
        let docs: Vec<Document> = (0..n)
            .map(|i| Document::message(&format!("s{}", i % 40), &format!("m{i}"), i as u64, Role::User, &text(i)))
            .collect();
        coll.add(&docs).unwrap();
        coll.flush().unwrap();
    }
    let store = TeamStore::connect(&pg.url).unwrap();
    let vector_indexes = |project: &str| -> i64 {
        query(
            &pg.url,
            &format!(
                "SELECT count(*) FROM pg_indexes i JOIN pg_index x ON x.indexrelid = format('%I.%I', i.schemaname, i.indexname)::regclass
                 WHERE i.schemaname = 'cdx_bulk' AND i.indexdef LIKE '%hnsw%' AND x.indisvalid
                   AND i.tablename LIKE 'v\\_{project}/%'"
            ),
        )
        .unwrap()[0]
            .get(0)
    };

    let report = store.push(&index, Some("큰-project")).unwrap();
    assert_eq!((report.sent, report.bulk_loaded), (n, 1), "{report:?}");
    assert!(report.without_vector_index.is_empty(), "{report:?}");
    let table: String = query(
        &pg.url,
        "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables WHERE schemaname = 'cdx_bulk' AND tablename LIKE 'v\\_큰-project/%'",
    )
    .unwrap()[0]
        .get(0);
    let vectors: i64 = query(&pg.url, &format!("SELECT count(*) FROM {table}")).unwrap()[0].get(0);
    assert_eq!(vectors as usize, n, "every vector loaded");
    assert_eq!(vector_indexes("큰-project"), 1, "the vector index is built, valid");
    let glossary = index.options().collection.glossary.clone();
    let by_meaning = |store: &TeamStore, i: usize| -> Vec<String> {
        let q = TeamQuery { mode: SearchMode::Semantic, limit: 3, ..TeamQuery::new(&text(i)) };
        store.search(&q, Some(embedder.as_ref()), &glossary).unwrap().into_iter().map(|h| h.doc.content).collect()
    };
    for i in [0, 17, 999, n - 1] {
        assert!(by_meaning(&store, i).contains(&text(i)), "document {i} found by its own words' meaning");
    }
    let again = store.push(&index, Some("큰-project")).unwrap();
    assert_eq!((again.sent, again.bulk_loaded), (0, 0), "{again:?}");

    // A quoted phrase whose words many documents hold apart: the team store reads on past the
    // first page of candidates holding both words until it has those holding them in order,
    // and finds what the local search finds.
    let coll = index.collection("bulk", "큰-project").unwrap();
    let phrase = TeamQuery { mode: SearchMode::Lexical, limit: 100, ..TeamQuery::new("\"redis timeout\"") };
    let mut local_query = Query::new("\"redis timeout\"");
    local_query.mode = Some(SearchMode::Lexical);
    local_query.limit = 100;
    let local: HashSet<String> = coll.query(&local_query).unwrap().hits.into_iter().map(|h| h.doc.content).collect();
    let apart = (0..n).filter(|&i| text(i).contains("redis") && text(i).contains("timeout")).count();
    assert!(
        !local.is_empty() && local.len() < 100 && apart > 3 * 100,
        "the phrase is held in order by {} documents, its words apart by {apart}: the case tests nothing",
        local.len()
    );
    let team: HashSet<String> = store
        .search(&TeamQuery { project: Some("큰-project".into()), ..phrase }, None, &glossary)
        .unwrap()
        .into_iter()
        .map(|h| h.doc.content)
        .collect();
    assert_eq!(team, local, "by a phrase, the team store finds the documents the local search finds");

    // Cut short after its rows: the state a push killed during its load leaves (the index
    // dropped, the rows committed). A member granted the tenant cannot build it and is told;
    // searches still answer, scanning exactly; the owner's next push builds it.
    let second = store.push(&index, Some("second")).unwrap();
    assert_eq!(second.bulk_loaded, 1);
    let name: String = query(
        &pg.url,
        "SELECT format('%I.%I', schemaname, indexname) FROM pg_indexes WHERE schemaname = 'cdx_bulk' AND tablename LIKE 'v\\_second/%' AND indexdef LIKE '%hnsw%'",
    )
    .unwrap()[0]
        .get(0);
    sql(&pg.url, &format!("DROP INDEX {name}")).unwrap();
    sql(&pg.url, "CREATE ROLE carol LOGIN").unwrap();
    store.grant("carol", "bulk", None).unwrap();
    let carol = TeamStore::connect(&pg.as_user("carol", "postgres")).unwrap();
    let report = carol.push(&index, Some("second")).unwrap();
    assert_eq!(report.without_vector_index, vec!["bulk/second".to_string()], "{report:?}");
    assert_eq!(vector_indexes("second"), 0);
    let q =
        TeamQuery { mode: SearchMode::Semantic, limit: 3, project: Some("second".into()), ..TeamQuery::new(&text(5)) };
    let hits = carol.search(&q, Some(embedder.as_ref()), &glossary).unwrap();
    assert_eq!(hits.first().map(|h| h.doc.content.clone()), Some(text(5)), "an exact scan answers meanwhile");
    let report = store.push(&index, Some("second")).unwrap();
    assert!(report.without_vector_index.is_empty() && report.sent == 0, "{report:?}");
    assert_eq!(vector_indexes("second"), 1, "the owner's push builds it");
}
