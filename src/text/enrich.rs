//! Tags and domain for a message, from the files it touches and the words it uses.
//! Pure, deterministic; the tables below are the documentation.

use std::collections::BTreeSet;

use crate::doc::FileRef;

/// File extension → language tag.
const LANGUAGES: &[(&str, &str)] = &[
    ("rs", "rust"),
    ("go", "go"),
    ("py", "python"),
    ("ts", "typescript"),
    ("tsx", "typescript"),
    ("js", "javascript"),
    ("jsx", "javascript"),
    ("mjs", "javascript"),
    ("java", "java"),
    ("kt", "kotlin"),
    ("swift", "swift"),
    ("c", "c"),
    ("h", "c"),
    ("cc", "cpp"),
    ("cpp", "cpp"),
    ("hpp", "cpp"),
    ("cs", "csharp"),
    ("rb", "ruby"),
    ("php", "php"),
    ("sh", "shell"),
    ("bash", "shell"),
    ("zsh", "shell"),
    ("ps1", "powershell"),
    ("sql", "sql"),
    ("html", "html"),
    ("css", "css"),
    ("scss", "css"),
    ("vue", "vue"),
    ("svelte", "svelte"),
    ("md", "markdown"),
    ("yaml", "yaml"),
    ("yml", "yaml"),
    ("toml", "toml"),
    ("json", "json"),
    ("lua", "lua"),
    ("dart", "dart"),
    ("ex", "elixir"),
    ("exs", "elixir"),
    ("scala", "scala"),
    ("r", "r"),
    ("ipynb", "jupyter"),
];

/// Keyword (lower-case, matched as a whole word) → technology tag.
const TECHNOLOGIES: &[(&str, &str)] = &[
    ("kubernetes", "kubernetes"),
    ("k8s", "kubernetes"),
    ("kubectl", "kubernetes"),
    ("helm", "kubernetes"),
    ("docker", "docker"),
    ("dockerfile", "docker"),
    ("compose", "docker"),
    ("postgres", "postgres"),
    ("postgresql", "postgres"),
    ("psql", "postgres"),
    ("mysql", "mysql"),
    ("sqlite", "sqlite"),
    ("redis", "redis"),
    ("mongodb", "mongodb"),
    ("react", "react"),
    ("nextjs", "nextjs"),
    ("next.js", "nextjs"),
    ("vue", "vue"),
    ("svelte", "svelte"),
    ("tailwind", "tailwind"),
    ("terraform", "terraform"),
    ("aws", "aws"),
    ("gcp", "gcp"),
    ("azure", "azure"),
    ("graphql", "graphql"),
    ("grpc", "grpc"),
    ("kafka", "kafka"),
    ("nginx", "nginx"),
    ("git", "git"),
    ("github", "github"),
    ("cargo", "rust"),
    ("npm", "node"),
    ("node", "node"),
    ("pytorch", "pytorch"),
    ("torch", "pytorch"),
    ("tensorflow", "tensorflow"),
    ("cuda", "cuda"),
    ("llm", "llm"),
    ("embedding", "embeddings"),
    ("embeddings", "embeddings"),
    ("qdrant", "vector-db"),
    ("chromem", "vector-db"),
    ("hnsw", "vector-db"),
    ("odoo", "odoo"),
    ("django", "django"),
    ("flask", "flask"),
    ("fastapi", "fastapi"),
    ("rails", "rails"),
    ("jwt", "auth"),
    ("oauth", "auth"),
    ("hyprland", "hyprland"),
    ("systemd", "systemd"),
    ("linux", "linux"),
];

/// Domain rules, first match wins: (path fragments, keywords, domain).
const DOMAINS: &[(&[&str], &[&str], &str)] = &[
    (&["test", "spec", "__tests__"], &["test", "tests", "pytest", "unittest", "coverage"], "testing"),
    (
        &["docker", ".github/", "deploy", "k8s", "terraform", "infra", ".ci/", "ansible", "helm"],
        &["deploy", "deployment", "kubernetes", "docker", "ci", "pipeline", "terraform", "nginx", "systemd"],
        "infrastructure",
    ),
    (
        &["components/", "pages/", "web/", "frontend", "ui/", ".css", ".tsx", ".jsx", ".vue", ".svelte", ".html"],
        &["css", "react", "component", "frontend", "layout", "button", "navbar", "ui"],
        "frontend",
    ),
    (
        &["migrations", "schema", ".sql", "data/", "notebooks", ".ipynb", "etl"],
        &["dataset", "sql", "migration", "etl", "training", "pandas", "dataframe"],
        "data",
    ),
    (&["docs/", "readme", ".md"], &["documentation", "readme", "docs"], "docs"),
    (
        &["api/", "server", "handlers", "routes", "backend", "src/", "internal/", "cmd/"],
        &["api", "endpoint", "server", "database", "backend", "handler", "auth"],
        "backend",
    ),
];

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '.' || c == '-'))
        .map(|w| w.trim_matches(|c| c == '.' || c == '-').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Tags of a message: language tags from its files' extensions, technology tags from
/// keywords in its text. Sorted, without duplicates.
pub fn tags(text: &str, files: &[FileRef]) -> Vec<String> {
    let mut out = BTreeSet::new();
    for f in files {
        let name = f.path.rsplit('/').next().unwrap_or(&f.path).to_lowercase();
        if name == "dockerfile" {
            out.insert("docker".to_string());
        }
        if let Some((_, ext)) = name.rsplit_once('.')
            && let Some((_, lang)) = LANGUAGES.iter().find(|(e, _)| *e == ext)
        {
            out.insert(lang.to_string());
        }
    }
    let ws = words(text);
    for (kw, tag) in TECHNOLOGIES {
        if ws.contains(*kw) {
            out.insert(tag.to_string());
        }
    }
    out.into_iter().collect()
}

/// Domain of a message: the first rule (testing, infrastructure, frontend, data, docs,
/// backend) whose path fragments match one of its files, else whose keywords appear in its
/// text at least twice; `None` when nothing matches.
pub fn domain(text: &str, files: &[FileRef]) -> Option<String> {
    let paths: Vec<String> = files.iter().map(|f| f.path.to_lowercase()).collect();
    for (frags, _, d) in DOMAINS {
        if paths.iter().any(|p| frags.iter().any(|f| p.contains(f))) {
            return Some(d.to_string());
        }
    }
    let lower = text.to_lowercase();
    let all: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    for (_, kws, d) in DOMAINS {
        if all.iter().filter(|w| kws.contains(w)).count() >= 2 {
            return Some(d.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::FileAction;

    fn f(p: &str) -> FileRef {
        FileRef { path: p.into(), line_ranges: vec![], action: FileAction::Edited }
    }

    #[test]
    fn tags_and_domains() {
        assert_eq!(tags("deploy with kubectl and docker", &[f("src/main.rs")]), ["docker", "kubernetes", "rust"]);
        assert_eq!(domain("", &[f("web/src/Navbar.tsx")]).as_deref(), Some("frontend"));
        assert_eq!(domain("", &[f("tests/auth_test.go")]).as_deref(), Some("testing"));
        assert_eq!(domain("the api server handler returns 500 from the database", &[]).as_deref(), Some("backend"));
        assert_eq!(domain("hello there", &[]), None);
    }
}
