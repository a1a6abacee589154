//! Who sees what in the team store: grants of tenants and projects to database roles, and
//! row-level security on a tenant's shared tables (its catalog of projects, their models and
//! the tombstones of forgotten sessions), so a member granted one project reads and writes only
//! that project's rows there; each project's own tables are bounded by their grants.

use super::{TeamStore, docs_table, ident, schema, vectors_table};
use crate::error::{Error, Result};

/// Puts row-level security on the shared tables of `tenant`'s schema, unless they carry it
/// already (then it takes no lock on them), and names each project's documents table where its
/// catalog row has none (a row from before 2026-11-29, which no member would see). A project's
/// `docs` column holds that name; a row whose table is gone or unnamed is seen by no member.
/// Run inside the caller's transaction, after the schema lock.
pub(super) fn secure_in(tx: &mut postgres::Transaction<'_>, tenant: &str) -> std::result::Result<(), postgres::Error> {
    let s = schema(tenant);
    let secured: i64 = tx
        .query_one(
            "SELECT count(*) FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
             WHERE p.polname = 'granted' AND c.relnamespace = to_regnamespace($1)
               AND c.relname IN ('projects', 'models', 'forgotten')",
            &[&s],
        )?
        .get(0);
    if secured < 3 {
        // The role may `what` the documents table a catalog row names (none: it may not).
        let may =
            |docs: &str, what: &str| format!("coalesce(has_table_privilege(to_regclass({docs}), '{what}'), false)");
        let (own, sees, deletes) = (may("docs", "SELECT"), may("p.docs", "SELECT"), may("p.docs", "DELETE"));
        tx.batch_execute(&format!(
            "ALTER TABLE {s}.projects ADD COLUMN IF NOT EXISTS docs text;
             ALTER TABLE {s}.projects ENABLE ROW LEVEL SECURITY;
             ALTER TABLE {s}.models ENABLE ROW LEVEL SECURITY;
             ALTER TABLE {s}.forgotten ENABLE ROW LEVEL SECURITY;
             DROP POLICY IF EXISTS granted ON {s}.projects;
             CREATE POLICY granted ON {s}.projects USING ({own});
             DROP POLICY IF EXISTS granted ON {s}.models;
             CREATE POLICY granted ON {s}.models
                 USING (EXISTS (SELECT 1 FROM {s}.projects p WHERE p.project = models.project AND {sees}));
             DROP POLICY IF EXISTS granted ON {s}.forgotten;
             CREATE POLICY granted ON {s}.forgotten
                 USING (EXISTS (SELECT 1 FROM {s}.projects p WHERE p.project = forgotten.project AND {sees}))
                 WITH CHECK (EXISTS (SELECT 1 FROM {s}.projects p WHERE p.project = forgotten.project AND {deletes}));"
        ))?;
    }
    let unnamed = tx.query(&format!("SELECT project FROM {s}.projects WHERE docs IS NULL"), &[])?;
    for r in unnamed {
        let project: String = r.get(0);
        tx.execute(
            &format!("UPDATE {s}.projects SET docs = $2 WHERE project = $1"),
            &[&project, &docs_table(tenant, &project)],
        )?;
    }
    Ok(())
}

impl TeamStore {
    /// The tenants and projects the store holds that this connection's role can read.
    pub fn projects(&self) -> Result<Vec<(String, String)>> {
        self.with(|c| {
            let schemas: Vec<String> = c
                .query(
                    "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'cdx\\_%' AND has_schema_privilege(oid, 'USAGE')",
                    &[],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let mut out = Vec::new();
            for name in schemas {
                let tenant = name.trim_start_matches("cdx_").to_string();
                let rows = match c.query(&format!("SELECT project FROM {}.projects ORDER BY project", schema(&tenant)), &[]) {
                    Ok(rows) => rows,
                    Err(e) if e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => continue,
                    Err(e) => return Err(e),
                };
                let projects: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
                let tables: Vec<String> = projects.iter().map(|p| docs_table(&tenant, p)).collect();
                // Which of their documents tables the role may read, in one statement.
                let can: Vec<bool> = c
                    .query(
                        "SELECT coalesce(has_table_privilege(to_regclass(t), 'SELECT'), false)
                         FROM unnest($1::text[]) WITH ORDINALITY AS u(t, i) ORDER BY i",
                        &[&tables],
                    )?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                out.extend(projects.into_iter().zip(can).filter(|(_, can)| *can).map(|(p, _)| (tenant.clone(), p)));
            }
            Ok(out)
        })
    }

    /// Gives the database role `role` a tenant (every project, and those pushed later) or one
    /// project of it: read, write and forget. The role must exist in the database. The
    /// tenant's shared tables are secured first ([`TeamStore::secure_catalog`]): a member
    /// granted one project sees only its rows there.
    pub fn grant(&self, role: &str, tenant: &str, project: Option<&str>) -> Result<()> {
        self.secure_catalog(tenant)?;
        let (s, r) = (schema(tenant), ident("", role));
        let mut sql = format!(
            "GRANT USAGE ON SCHEMA {s} TO {r};
             GRANT SELECT ON {s}.projects, {s}.models TO {r};
             GRANT SELECT, INSERT ON {s}.forgotten TO {r};"
        );
        match project {
            Some(p) => {
                let tables = self.tables_of(tenant, p)?;
                sql.push_str(&format!("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {r};", tables.join(", ")));
            }
            None => sql.push_str(&format!(
                "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {r};
                 ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {r};
                 REVOKE INSERT, UPDATE, DELETE ON {s}.projects, {s}.models FROM {r};
                 REVOKE UPDATE, DELETE ON {s}.forgotten FROM {r};"
            )),
        }
        self.with(|c| c.batch_execute(&sql))
    }

    /// Takes back what [`TeamStore::grant`] gave.
    pub fn revoke(&self, role: &str, tenant: &str, project: Option<&str>) -> Result<()> {
        let (s, r) = (schema(tenant), ident("", role));
        let sql = match project {
            Some(p) => format!("REVOKE ALL ON {} FROM {r};", self.tables_of(tenant, p)?.join(", ")),
            None => format!(
                "ALTER DEFAULT PRIVILEGES IN SCHEMA {s} REVOKE ALL ON TABLES FROM {r};
                 REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM {r};
                 REVOKE ALL ON SCHEMA {s} FROM {r};"
            ),
        };
        self.with(|c| c.batch_execute(&sql))
    }

    /// A project's tables: its documents and one vectors table per model.
    fn tables_of(&self, tenant: &str, project: &str) -> Result<Vec<String>> {
        let s = schema(tenant);
        let models: Vec<String> = self
            .with(|c| c.query(&format!("SELECT model FROM {s}.models WHERE project = $1"), &[&project]))
            .map(|rows| rows.iter().map(|r| r.get(0)).collect())?;
        if models.is_empty() {
            return Err(Error::Team {
                store: self.shown.clone(),
                reason: format!("tenant `{tenant}` has no project `{project}` in the team store"),
                fix: "push the project first (`convdex push --project P`), or check the names with `convdex team list`"
                    .into(),
            });
        }
        let mut out = vec![docs_table(tenant, project)];
        out.extend(models.iter().map(|m| vectors_table(tenant, project, m)));
        Ok(out)
    }

    /// Row-level security on a tenant's shared tables, so a member sees there only the projects
    /// granted to them: `projects` (names and folders) shows a row when the role may read that
    /// project's documents table, `models` and `forgotten` the rows of the projects it sees, and
    /// a tombstone may be added only for a project whose documents the role may delete. Each
    /// project's own tables need none: a table grant is their boundary. The tables' owner (who
    /// pushed them) is not subject to it; the first securing of a tenant must be run by that
    /// owner, later calls change nothing and take no lock. Run by [`TeamStore::grant`] and by
    /// every push that creates a project's tables; a store made before 2026-11-29 is secured at
    /// its next grant or new project, and until then its members read every project's catalog
    /// row. Table names themselves (`d_<project>`) stay visible to any role in the database's
    /// own catalog (`pg_class`); what is hidden is the rows: folders, models, tombstones.
    pub fn secure_catalog(&self, tenant: &str) -> Result<()> {
        let s = schema(tenant);
        let there: bool =
            self.with(|c| Ok(c.query_one("SELECT to_regclass($1) IS NOT NULL", &[&format!("{s}.projects")])?.get(0)))?;
        if !there {
            return Err(Error::Team {
                store: self.shown.clone(),
                reason: format!("tenant `{tenant}` has no project in the team store"),
                fix: "push a project of it first (`convdex push`), or check the names with `convdex team list`".into(),
            });
        }
        self.with(|c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock(hashtext('convdex schema'))", &[])?;
            secure_in(&mut tx, tenant)?;
            tx.commit()
        })
    }
}
