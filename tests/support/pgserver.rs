//! A PostgreSQL 16.2 with pgvector 0.6.2 for one test or bench run: PyPI's `pgserver`, started
//! in a temporary directory by `tests/support/postgres_for_tests.py` (`.ci/run` and `make test`
//! install it), stopped and its files deleted when dropped. Shared by the team store's tests
//! and `benches/team.rs`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A PostgreSQL server, stopped (and its files deleted) when dropped.
pub struct Postgres {
    child: Child,
    /// `host=SOCKET_DIR user=postgres dbname=postgres`
    pub url: String,
}

impl Postgres {
    /// Starts a server whose files live under `dir`.
    pub fn start(dir: &Path) -> Postgres {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/postgres_for_tests.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(dir.join("pg"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(
            line.starts_with("host="),
            "PostgreSQL did not start: install PyPI's pgserver (`pip install pgserver==0.1.4`; .ci/run and make test do)"
        );
        Postgres { child, url: line.trim().to_string() }
    }

    /// The server's URL for another role and database.
    pub fn as_user(&self, user: &str, db: &str) -> String {
        self.url.replace("user=postgres", &format!("user={user}")).replace("dbname=postgres", &format!("dbname={db}"))
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // The script stops the server when its input closes.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}
