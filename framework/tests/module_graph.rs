//! The crate's modules import each other without a circle, and the core does not import the
//! middleware: checked on the source, so CI fails when a change ties a loop.
//!
//! Each file under `src/` is a module. An edge A → B is a path in A's code (a `use`, a
//! qualified name, or `crate::…` tokens inside a macro call) that names an item of B: a
//! `crate::` or `super::` path goes to the longest module it names, and a name the crate root
//! re-exports (`crate::Context`) goes to the module it comes from. Doc comments and
//! `#[cfg(test)]` items are not code the crate is built from, so they make no edges; the crate
//! root (`lib.rs`), which declares and re-exports everything, is no node.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// A module path under the crate root, e.g. `["middleware", "session"]`.
type ModPath = Vec<String>;

fn module_files(dir: &Path, prefix: &[String], out: &mut BTreeMap<ModPath, PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut inner = prefix.to_vec();
            inner.push(name);
            module_files(&path, &inner, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = prefix.to_vec();
            // A binary's `main.rs` is its root, as a library's `lib.rs` is.
            if name != "mod" && name != "lib" && !(name == "main" && prefix.is_empty()) {
                module.push(name);
            }
            out.insert(module, path);
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The `crate::`/`super::` paths of one file, as written (segments, `super` unresolved).
#[derive(Default)]
struct Paths(Vec<Vec<String>>);

impl Paths {
    fn tokens(&mut self, tokens: TokenStream) {
        let flat: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < flat.len() {
            match &flat[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    // `:: ident`, as often as it comes.
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (flat.get(j), flat.get(j + 1), flat.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segs.push(next.to_string());
                        j += 3;
                    }
                    if segs.len() > 1 {
                        self.0.push(segs);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.push_use(prefix, &n.ident.to_string()),
            syn::UseTree::Rename(r) => self.push_use(prefix, &r.ident.to_string()),
            syn::UseTree::Glob(_) => self.push_use(prefix, "*"),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn push_use(&mut self, prefix: &[String], last: &str) {
        let mut segs = prefix.to_vec();
        if last != "self" && last != "*" {
            segs.push(last.to_owned());
        }
        if matches!(segs.first().map(String::as_str), Some("crate" | "super")) && segs.len() > 1 {
            self.0.push(segs);
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Const(c) => &c.attrs,
            _ => &[],
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if matches!(segs.first().map(String::as_str), Some("crate" | "super")) && segs.len() > 1 {
            self.0.push(segs);
        }
        syn::visit::visit_path(self, path);
    }
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
    }
}

/// The module a path names: `super` resolved against `from`, then the longest module prefix;
/// a name re-exported by the crate root goes to where it comes from.
fn resolve(
    from: &ModPath,
    segs: &[String],
    modules: &BTreeMap<ModPath, PathBuf>,
    root_exports: &HashMap<String, ModPath>,
) -> Option<ModPath> {
    let mut base: ModPath = Vec::new();
    let mut rest = segs;
    if segs[0] == "super" {
        base = from.clone();
        while rest.first().is_some_and(|s| s == "super") {
            base.pop()?;
            rest = &rest[1..];
        }
    } else {
        rest = &rest[1..];
    }
    let mut full = base;
    full.extend(rest.iter().cloned());
    if full.len() == 1
        && let Some(target) = root_exports.get(&full[0])
    {
        return Some(target.clone());
    }
    (1..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|candidate| modules.contains_key(candidate))
}

/// Strongly connected components with more than one module (Tarjan).
fn circles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'g> {
        graph: &'g BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: HashMap<&'g ModPath, usize>,
        low: HashMap<&'g ModPath, usize>,
        stack: Vec<&'g ModPath>,
        on_stack: BTreeSet<&'g ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn connect<'g>(s: &mut State<'g>, v: &'g ModPath) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                connect(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v) {
            connect(&mut state, v);
        }
    }
    state.found
}

fn module_graph() -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    module_graph_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The import graph of the crate (or binary) whose root file is in `src`.
fn module_graph_of(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut modules = BTreeMap::new();
    module_files(src, &[], &mut modules);
    let parsed: BTreeMap<ModPath, syn::File> = modules
        .iter()
        .map(|(m, path)| {
            let text = std::fs::read_to_string(path).unwrap();
            let file = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            (m.clone(), file)
        })
        .collect();
    // What the crate root re-exports: `pub use context::Context` names `Context` → context.
    let mut root_exports = HashMap::new();
    for item in &parsed[&Vec::new()].items {
        if let syn::Item::Use(u) = item
            && matches!(u.vis, syn::Visibility::Public(_))
        {
            let mut paths = Paths::default();
            paths.use_tree(&mut vec!["crate".to_owned()], &u.tree);
            for segs in paths.0 {
                let name = segs.last().unwrap().clone();
                if let Some(target) = resolve(&Vec::new(), &segs, &modules, &HashMap::new())
                    && !target.is_empty()
                {
                    root_exports.insert(name, target);
                }
            }
        }
    }
    let mut graph: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (module, file) in &parsed {
        if module.is_empty() {
            continue;
        }
        let mut paths = Paths::default();
        paths.visit_file(file);
        let edges = graph.entry(module.clone()).or_default();
        for segs in &paths.0 {
            if let Some(target) = resolve(module, segs, &modules, &root_exports)
                && !target.is_empty()
                && target != *module
            {
                edges.insert(target);
            }
        }
    }
    graph
}

fn name(m: &ModPath) -> String {
    m.join("::")
}

#[test]
fn no_module_imports_itself_through_a_circle() {
    let graph = module_graph();
    assert!(
        graph.len() > 30,
        "the walk found the modules: {}",
        graph.len()
    );
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    assert!(edges > 50, "the walk found the imports: {edges}");
    let found = circles(&graph);
    let text: Vec<String> = found
        .iter()
        .map(|c| {
            let members: BTreeSet<&ModPath> = c.iter().collect();
            let ties: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| members.contains(b))
                        .map(move |b| format!("{} -> {}", name(a), name(b)))
                })
                .collect();
            format!("circle of {}: {}", c.len(), ties.join(", "))
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", text.join("\n"));
}

/// The benchmark harness's modules too (`benches/src/bin/bench`): `load` and `servers`
/// imported each other.
#[test]
fn the_bench_harness_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/src/bin/bench");
    let graph = module_graph_of(&src);
    assert!(
        graph.len() > 5,
        "the walk found the modules: {}",
        graph.len()
    );
    let found = circles(&graph);
    let names: Vec<Vec<String>> = found.iter().map(|c| c.iter().map(name).collect()).collect();
    assert!(
        found.is_empty(),
        "import circles in the bench harness: {names:?}"
    );
}

#[test]
fn the_core_does_not_import_the_middleware() {
    let graph = module_graph();
    let wrong: Vec<String> = graph
        .iter()
        .filter(|(from, _)| from.first().is_none_or(|f| f != "middleware"))
        .flat_map(|(from, to)| {
            to.iter()
                .filter(|t| t.first().is_some_and(|f| f == "middleware"))
                .map(move |t| format!("{} -> {}", name(from), name(t)))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "core modules importing middleware: {wrong:?}"
    );
}

/// The context knows its connection only through `ConnectionInfo` (`connection.rs`): no file
/// of `context/` imports the TLS module or the listener.
#[test]
fn the_context_does_not_import_tls_or_the_listener() {
    let graph = module_graph();
    let context: Vec<&ModPath> = graph
        .keys()
        .filter(|m| m.first().is_some_and(|f| f == "context"))
        .collect();
    assert!(context.len() > 5, "the walk found context/: {context:?}");
    let wrong: Vec<String> = context
        .iter()
        .flat_map(|from| {
            graph[*from]
                .iter()
                .filter(|t| t.first().is_some_and(|f| f == "tls" || f == "listener"))
                .map(move |t| format!("{} -> {}", name(from), name(t)))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "context/ importing tls or listener: {wrong:?}"
    );
    assert!(
        graph[&vec!["connection".to_owned()]].contains(&vec!["client_ip".to_owned()]),
        "the walk sees connection.rs' imports"
    );
}

#[test]
fn the_check_sees_a_circle() {
    let a = vec!["a".to_owned()];
    let b = vec!["b".to_owned()];
    let c = vec!["c".to_owned()];
    let mut graph = BTreeMap::new();
    graph.insert(a.clone(), BTreeSet::from([b.clone()]));
    graph.insert(b.clone(), BTreeSet::from([c.clone()]));
    graph.insert(c.clone(), BTreeSet::new());
    assert!(circles(&graph).is_empty());
    graph.get_mut(&c).unwrap().insert(a.clone());
    assert_eq!(circles(&graph), vec![vec![a, b, c]]);
}
