//! Fresh names for the nodes and values passes create ([`Graph::unique_name`]).

use std::hash::BuildHasher;

use super::Graph;

impl Graph {
    /// Records `name` as used, so [`Graph::unique_name`] avoids it. Names of the graph's
    /// nodes and values need not be recorded: they are taken in any case.
    pub fn reserve_name(&mut self, name: &str) {
        self.names.insert(self.name_hasher.hash_one(name));
    }

    /// A name starting with `base` that no node or value of the graph uses, and that no earlier
    /// call returned (the name is reserved).
    pub fn unique_name(&mut self, base: &str) -> String {
        if !self.names_built {
            self.names_built = true;
            let hasher = &self.name_hasher;
            let names = &mut self.names;
            names.reserve(self.g.node_count());
            for node in self.g.node_weights() {
                for name in std::iter::once(&node.name).chain(node.outputs.iter().map(|v| &v.name))
                {
                    if !name.is_empty() {
                        names.insert(hasher.hash_one(name.as_str()));
                    }
                }
            }
        }
        let mut candidate = base.to_string();
        let mut k = 1u64;
        while !self
            .names
            .insert(self.name_hasher.hash_one(candidate.as_str()))
        {
            candidate = format!("{base}_{k}");
            k += 1;
        }
        candidate
    }
}
