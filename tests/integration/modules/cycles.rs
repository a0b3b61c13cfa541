//! The cycles of the module graph: its strongly connected components, and each one's
//! shortest cycle, reported with an example reference per import.

use super::*;

/// Every cycle, as text: per strongly connected component of more than one module (a
/// group where each module reaches every other), its members, its shortest cycle, then
/// every other import inside it (each lies on a cycle too), each edge with an example
/// reference. Empty when there are none.
pub(super) fn cycle_report(edges: &Edges) -> String {
    let mut report = String::new();
    let components: Vec<Vec<String>> =
        strongly_connected(edges).into_iter().filter(|component| component.len() > 1).collect();
    let example = |from: &str, to: &str| {
        let refs = &edges[from][to];
        let more = if refs.len() > 1 { format!(" (+{} more)", refs.len() - 1) } else { String::new() };
        format!("{from} → {to}: {}:{} `{}`{more}", refs[0].file, refs[0].line, refs[0].written)
    };
    for (n, component) in components.iter().enumerate() {
        let members: BTreeSet<&str> = component.iter().map(String::as_str).collect();
        let _ =
            writeln!(report, "\ncycle group {} ({} modules): {}", n + 1, members.len(), component.join(", "));
        let cycle = shortest_cycle(edges, &members);
        let _ = writeln!(report, "   {}", cycle.join(" → "));
        let on_cycle: BTreeSet<(&str, &str)> =
            cycle.windows(2).map(|p| (p[0].as_str(), p[1].as_str())).collect();
        for pair in cycle.windows(2) {
            let _ = writeln!(report, "     {}", example(&pair[0], &pair[1]));
        }
        let others: Vec<(&str, &str)> = members
            .iter()
            .flat_map(|&from| edges[from].keys().map(move |to| (from, to.as_str())))
            .filter(|edge| members.contains(edge.1) && !on_cycle.contains(edge))
            .collect();
        if !others.is_empty() {
            let _ = writeln!(report, "   other imports inside the group:");
        }
        for (from, to) in others {
            let _ = writeln!(report, "     {}", example(from, to));
        }
    }
    if !components.is_empty() {
        let _ = write!(report, "\n{} cycle group(s)", components.len());
    }
    report
}

/// The shortest cycle through a component's members, from and back to the same module.
pub(super) fn shortest_cycle(edges: &Edges, members: &BTreeSet<&str>) -> Vec<String> {
    let mut shortest: Option<Vec<String>> = None;
    for &from in members {
        for to in edges[from].keys().filter(|t| members.contains(t.as_str())) {
            let back =
                shortest_path(edges, members, to, from).expect("members of one component reach each other");
            if shortest.as_ref().is_none_or(|s| back.len() + 1 < s.len()) {
                shortest = Some(std::iter::once(from.to_owned()).chain(back).collect());
            }
        }
    }
    shortest.expect("a component of more than one module has an edge inside it")
}

/// The shortest path `from` → … → `to` among `members`, both ends included.
pub(super) fn shortest_path(
    edges: &Edges,
    members: &BTreeSet<&str>,
    from: &str,
    to: &str,
) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut path = vec![to.to_owned()];
            let mut step = to;
            while step != from {
                step = came_from[step];
                path.push(step.to_owned());
            }
            path.reverse();
            return Some(path);
        }
        for next in edges.get(at).into_iter().flat_map(BTreeMap::keys) {
            if members.contains(next.as_str()) && next != from && !came_from.contains_key(next.as_str()) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

/// Tarjan's strongly connected components, each sorted, in a stable order.
pub(super) fn strongly_connected(edges: &Edges) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            let edges = self.edges;
            for w in edges.get(v).into_iter().flat_map(BTreeMap::keys) {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    self.low.insert(v, self.low[v].min(self.low[w.as_str()]));
                } else if self.on_stack.contains(w.as_str()) {
                    self.low.insert(v, self.low[v].min(self.index[w.as_str()]));
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                component.sort();
                self.components.push(component);
            }
        }
    }
    let mut tarjan = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for v in edges.keys() {
        if !tarjan.index.contains_key(v.as_str()) {
            tarjan.visit(v);
        }
    }
    tarjan.components.sort();
    tarjan.components
}
