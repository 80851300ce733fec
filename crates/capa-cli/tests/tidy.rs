//! Tidy checks over the source tree, as rust-analyzer has them: the crates
//! keep the order ARCHITECTURE.md gives, no file of a crate imports from a
//! file that imports it (its caller included), and ARCHITECTURE.md names
//! only paths that exist. They read files only: no build, no engine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The crates in the order of ARCHITECTURE.md's table of crates.
fn documented_order(architecture: &str) -> Vec<String> {
    let crates = architecture.split("\n## Crates").nth(1).expect("ARCHITECTURE.md has a `## Crates` section");
    let crates = crates.split("\n## ").next().unwrap();
    crates
        .lines()
        .filter_map(|line| line.strip_prefix("| `")?.split('`').next())
        .filter(|name| name.starts_with("capa-"))
        .map(String::from)
        .collect()
}

/// The names in a Cargo.toml's `[dependencies]` section.
fn dependencies(manifest: &str) -> Vec<String> {
    let Some(section) = manifest.split("\n[dependencies]\n").nth(1) else { return Vec::new() };
    let section = section.split("\n[").next().unwrap();
    section
        .lines()
        .filter_map(|line| line.split(['.', '=', ' ']).next())
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .map(String::from)
        .collect()
}

#[test]
fn crates_depend_only_on_crates_before_them() {
    let root = workspace();
    let order = documented_order(&read(&root.join("ARCHITECTURE.md")));
    let position = |name: &str| order.iter().position(|c| c == name);
    let net = position("capa-net").expect("ARCHITECTURE.md lists capa-net");
    let mut problems = Vec::new();
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("Cargo.toml"))
        .filter(|path| path.exists())
        .collect();
    manifests.sort();
    assert!(manifests.len() >= 10, "crates/ has {} crates", manifests.len());
    for manifest in manifests {
        let name = manifest.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        let Some(at) = position(&name) else {
            problems.push(format!("{name} is missing from ARCHITECTURE.md's table of crates"));
            continue;
        };
        for dependency in dependencies(&read(&manifest)) {
            match position(&dependency) {
                Some(other) if other >= at => {
                    problems.push(format!("{name} depends on {dependency}, which ARCHITECTURE.md lists after it"))
                }
                None if dependency == "burn" && at < net => {
                    problems.push(format!("{name} depends on burn, which only capa-net and the crates after it may"))
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn architecture_names_only_paths_that_exist() {
    let root = workspace();
    let text = read(&root.join("ARCHITECTURE.md"));
    let mut files = BTreeSet::new();
    collect_files(&root.join("crates"), &mut files);
    let names: BTreeSet<String> =
        files.iter().map(|path| path.file_name().unwrap().to_string_lossy().into_owned()).collect();
    let tops = ["crates/", "scripts/", "docs/", "configs/", "benches/", "nets/", ".ci/"];
    let mut missing = BTreeSet::new();
    let mut checked = 0;
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c))) {
        let word = word.trim_end_matches('.');
        if tops.iter().any(|top| word.starts_with(top)) {
            checked += 1;
            if !root.join(word).exists() {
                missing.insert(word.to_string());
            }
        } else if word.ends_with(".rs") && !word.contains('/') {
            checked += 1;
            if !names.contains(word) {
                missing.insert(word.to_string());
            }
        }
    }
    assert!(checked > 10, "only {checked} paths found in ARCHITECTURE.md");
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
}

fn collect_files(dir: &Path, out: &mut BTreeSet<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                collect_files(&path, out);
            }
        } else {
            out.insert(path);
        }
    }
}

/// One crate's module tree: each file's module path and its child modules.
struct Modules {
    /// File -> its module path from the crate root.
    path_of: BTreeMap<PathBuf, Vec<String>>,
    /// Module path -> its file.
    file_of: BTreeMap<Vec<String>, PathBuf>,
    /// File -> the files its `mod` items declare.
    children: BTreeMap<PathBuf, Vec<PathBuf>>,
}

impl Modules {
    fn of(root_file: &Path) -> Modules {
        let mut modules = Modules { path_of: BTreeMap::new(), file_of: BTreeMap::new(), children: BTreeMap::new() };
        modules.visit(root_file.to_path_buf(), Vec::new());
        modules
    }

    fn visit(&mut self, file: PathBuf, path: Vec<String>) {
        let source = read(&file);
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let folder = if ["lib", "main", "mod"].contains(&stem.as_str()) || path.is_empty() {
            file.parent().unwrap().to_path_buf()
        } else {
            file.parent().unwrap().join(&stem)
        };
        let mut children = Vec::new();
        for line in code_lines(&source) {
            let Some(name) = declared_module(line) else { continue };
            let child = [folder.join(format!("{name}.rs")), folder.join(&name).join("mod.rs")]
                .into_iter()
                .find(|candidate| candidate.exists());
            if let Some(child) = child {
                let mut child_path = path.clone();
                child_path.push(name);
                children.push(child.clone());
                self.visit(child, child_path);
            }
        }
        self.children.insert(file.clone(), children);
        self.file_of.insert(path.clone(), file.clone());
        self.path_of.insert(file, path);
    }

    /// The file that defines `name` as seen from module `module`: the module
    /// itself, or where a `pub use` of it leads.
    fn definer(&self, module: &[String], name: &str, depth: usize) -> Option<PathBuf> {
        let file = self.file_of.get(module)?;
        let source = read(file);
        if defines(&source, name) || depth > 8 {
            return Some(file.clone());
        }
        let mut globs = Vec::new();
        for path in reexports(&source) {
            let (last, rest) = path.split_last().unwrap();
            if last == "*" {
                globs.push(rest.to_vec());
            } else if last == name {
                // A re-export from another crate leads out of this one.
                let external = !["crate", "self", "super"].contains(&rest[0].as_str())
                    && !self.file_of.contains_key(&[module, &rest[..1]].concat());
                return if external { None } else { self.resolve(module, rest, Some(name), depth + 1) };
            }
        }
        globs.into_iter().find_map(|glob| {
            let target = self.absolute(module, &glob)?;
            self.definer(&target, name, depth + 1)
        })
    }

    /// `relative` (a path written in `module`, `crate::` or `super::` or a
    /// child's name first) as a module path from the root.
    fn absolute(&self, module: &[String], relative: &[String]) -> Option<Vec<String>> {
        let mut out = module.to_vec();
        for (i, segment) in relative.iter().enumerate() {
            match segment.as_str() {
                "crate" if i == 0 => out.clear(),
                "self" if i == 0 => {}
                "super" => {
                    out.pop()?;
                }
                _ => out.push(segment.clone()),
            }
        }
        Some(out)
    }

    /// The file a path written in `module` leads to: the deepest module it
    /// names, or, when it ends in an item, the file that defines the item.
    fn resolve(&self, module: &[String], segments: &[String], item: Option<&str>, depth: usize) -> Option<PathBuf> {
        let absolute = self.absolute(module, segments)?;
        let mut at = Vec::new();
        let mut rest = absolute.iter();
        for segment in rest.by_ref() {
            let mut deeper = at.clone();
            deeper.push(segment.clone());
            if self.file_of.contains_key(&deeper) {
                at = deeper;
            } else {
                return self.definer(&at, segment, depth);
            }
        }
        match item {
            Some(name) => self.definer(&at, name, depth),
            None => self.file_of.get(&at).cloned(),
        }
    }

    /// The files `file` imports from (its own module and children's paths
    /// included, since a child's item may be re-exported by a sibling).
    fn imports(&self, file: &Path) -> BTreeSet<PathBuf> {
        let source = read(file);
        let module = &self.path_of[file];
        let mut out = BTreeSet::new();
        let mut in_inline_module = false;
        for line in code_lines(&source) {
            if line.trim_start().starts_with("mod ") && line.trim_end().ends_with('{') {
                // `mod tests {`: from here `super` is this file's module.
                in_inline_module = true;
            }
            for path in paths_in(line) {
                let mut path = path;
                if in_inline_module && path.first().is_some_and(|s| s == "super") {
                    path.remove(0);
                    path.insert(0, "self".to_string());
                }
                if !["crate", "super", "self"].contains(&path[0].as_str()) || path.len() < 2 {
                    continue;
                }
                let (last, rest) = path.split_last().unwrap();
                let target = if last == "*" {
                    self.resolve(module, rest, None, 0)
                } else {
                    self.resolve(module, rest, Some(last), 0).or_else(|| self.resolve(module, &path, None, 0))
                };
                let target = target.or_else(|| self.macro_definer(last));
                if let Some(target) = target.filter(|t| t != file) {
                    out.insert(target);
                }
            }
        }
        out
    }

    /// The file holding `macro_rules! name` (exported macros live at the
    /// crate root in paths, but in their own file in the source).
    fn macro_definer(&self, name: &str) -> Option<PathBuf> {
        let definition = format!("macro_rules! {name} ");
        self.path_of.keys().find(|file| read(file).contains(&definition)).cloned()
    }
}

/// Lines of code: comments left out.
fn code_lines(source: &str) -> impl Iterator<Item = &str> {
    source.lines().filter(|line| !line.trim_start().starts_with("//"))
}

/// `name` of a `mod name;` line (any visibility).
fn declared_module(line: &str) -> Option<String> {
    let line = line.trim();
    let line = line.strip_prefix("pub(crate) ").or(line.strip_prefix("pub ")).unwrap_or(line);
    let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
    Some(name.trim().to_string())
}

/// Whether `source` defines an item called `name`.
fn defines(source: &str, name: &str) -> bool {
    let kinds = ["fn", "struct", "enum", "trait", "type", "const", "static", "union", "macro_rules!"];
    code_lines(source).any(|line| {
        let mut words = line.split(|c: char| c.is_whitespace() || "<(:{;".contains(c)).filter(|w| !w.is_empty());
        let mut previous = "";
        words.any(|word| {
            let found = word == name && kinds.contains(&previous);
            previous = word;
            found
        })
    })
}

/// The paths a file re-exports (`pub use` and `pub(crate) use`).
fn reexports(source: &str) -> Vec<Vec<String>> {
    let mut statement = String::new();
    let mut out = Vec::new();
    for line in code_lines(source) {
        let trimmed = line.trim();
        if statement.is_empty() && !(trimmed.starts_with("pub use ") || trimmed.starts_with("pub(crate) use ")) {
            continue;
        }
        statement.push_str(trimmed);
        statement.push(' ');
        if trimmed.ends_with(';') {
            let body = statement.split_once("use ").unwrap().1;
            let mut paths = Vec::new();
            expand(&tokens(body), &mut Vec::new(), &mut paths);
            out.extend(paths.into_iter().map(without_self));
            statement.clear();
        }
    }
    out
}

/// The paths named in a line: each `crate::`, `super::` or `self::` path,
/// brace groups expanded.
fn paths_in(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let tokens = tokens(line);
    for (i, token) in tokens.iter().enumerate() {
        let starts = ["crate", "super", "self"].contains(&token.as_str())
            && tokens.get(i + 1).is_some_and(|t| t == "::")
            && !(i > 0 && (tokens[i - 1] == "::" || tokens[i - 1] == "$"));
        if starts {
            expand(&tokens[i..], &mut Vec::new(), &mut out);
        }
    }
    out.into_iter().map(without_self).collect()
}

/// `a::b::self` (from `use a::b::{self, c}`) is `a::b`.
fn without_self(mut path: Vec<String>) -> Vec<String> {
    if path.len() > 1 && path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    path
}

/// Words, `::`, braces, commas and `$`, in order.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' || c == '*' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        match c {
            ':' if chars.peek() == Some(&':') => {
                chars.next();
                out.push("::".to_string());
            }
            '{' | '}' | ',' | '$' => out.push(c.to_string()),
            _ if c.is_whitespace() => {}
            _ => out.push(c.to_string()),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Expands the path at the start of `tokens` (with brace groups) onto
/// `prefix`, pushing each whole path; returns how many tokens it used.
fn expand(tokens: &[String], prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut i = 0;
    let depth = prefix.len();
    while i < tokens.len() {
        let token = &tokens[i];
        if token == "{" {
            i += 1;
            loop {
                i += expand(&tokens[i..], prefix, out);
                match tokens.get(i).map(String::as_str) {
                    Some(",") => i += 1,
                    Some("}") => {
                        i += 1;
                        break;
                    }
                    _ => break,
                }
                if tokens.get(i).map(String::as_str) == Some("}") {
                    i += 1;
                    break;
                }
            }
            prefix.truncate(depth);
            return i;
        }
        if token.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '*') {
            prefix.push(token.clone());
            i += 1;
            if tokens.get(i).map(String::as_str) == Some("::") {
                i += 1;
                continue;
            }
            if tokens.get(i).map(String::as_str) == Some("as") {
                i += 2;
            }
        }
        break;
    }
    if prefix.len() > depth {
        out.push(prefix.clone());
    }
    prefix.truncate(depth);
    i
}

#[test]
fn no_file_imports_from_a_file_that_imports_it() {
    let root = workspace();
    let mut cycles = Vec::new();
    let mut files_seen = 0;
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        let mut roots: Vec<PathBuf> =
            ["lib.rs", "main.rs"].iter().map(|r| src.join(r)).filter(|p| p.exists()).collect();
        if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
            roots.extend(bins.map(|b| b.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "rs")));
        }
        for crate_root in roots {
            let modules = Modules::of(&crate_root);
            files_seen += modules.path_of.len();
            let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
            for file in modules.path_of.keys() {
                let mut targets = modules.imports(file);
                targets.extend(modules.children[file].iter().cloned());
                edges.insert(file.clone(), targets);
            }
            for cycle in find_cycles(&edges) {
                let names: Vec<String> =
                    cycle.iter().map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string()).collect();
                cycles.push(names.join(" -> "));
            }
        }
    }
    assert!(files_seen > 100, "only {files_seen} files read");
    assert!(
        cycles.is_empty(),
        "files that import from a file that imports them (a `mod` counts as the parent importing the child):\n{}",
        cycles.join("\n")
    );
}

/// One cycle through each strongly connected group of files, as a path
/// that ends where it starts.
fn find_cycles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    let mut cycles = Vec::new();
    let mut in_a_cycle = BTreeSet::new();
    for start in edges.keys() {
        if in_a_cycle.contains(start) {
            continue;
        }
        // Breadth-first from `start`'s targets back to `start`: the shortest cycle through it.
        let mut came_from: BTreeMap<&PathBuf, &PathBuf> = BTreeMap::new();
        let mut frontier: Vec<&PathBuf> = vec![start];
        let mut found = None;
        'search: while !frontier.is_empty() {
            let mut next = Vec::new();
            for file in frontier {
                for target in edges.get(file).into_iter().flatten() {
                    if target == start {
                        found = Some(file);
                        break 'search;
                    }
                    if !came_from.contains_key(target) {
                        came_from.insert(target, file);
                        next.push(target);
                    }
                }
            }
            frontier = next;
        }
        if let Some(mut file) = found {
            let mut cycle = vec![start.clone(), file.clone()];
            while file != start {
                file = came_from[file];
                cycle.push(file.clone());
            }
            cycle.reverse();
            in_a_cycle.extend(cycle.iter().cloned());
            cycles.push(cycle);
        }
    }
    cycles
}
