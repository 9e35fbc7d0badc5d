//! A plain copy of a red-black tree and the check of its invariants (numbered as in
//! `rb_tree.rs`): the copy is read in one transaction by
//! [`RbTree::snapshot`](super::RbTree::snapshot), the check runs on plain data.

/// A node of an [`RbSnapshot`].
#[derive(Clone, Debug)]
pub(super) struct SnapshotNode {
    pub(super) key: u64,
    pub(super) red: bool,
    /// Whether the node's `parent` link named the node it hangs from.
    pub(super) parent_ok: bool,
    pub(super) left: Option<usize>,
    pub(super) right: Option<usize>,
}

/// A plain copy of an [`RbTree`](super::RbTree), for checking its invariants.
#[derive(Clone, Debug)]
pub struct RbSnapshot {
    pub(super) nodes: Vec<SnapshotNode>,
    pub(super) root: Option<usize>,
    /// Whether the copy met more nodes than were ever allocated (a cycle).
    pub(super) cyclic: bool,
}

impl RbSnapshot {
    /// The keys, in order.
    pub fn keys(&self) -> Vec<u64> {
        let mut keys = Vec::with_capacity(self.nodes.len());
        self.in_order(self.root, &mut keys);
        keys
    }

    fn in_order(&self, node: Option<usize>, keys: &mut Vec<u64>) {
        if let Some(index) = node {
            let node = &self.nodes[index];
            self.in_order(node.left, keys);
            keys.push(node.key);
            self.in_order(node.right, keys);
        }
    }

    /// Checks invariants 1–3 of `rb_tree.rs`; returns the number of keys.
    ///
    /// # Errors
    /// A description of the first violation found.
    pub fn check(&self) -> Result<usize, String> {
        if self.cyclic {
            return Err("the links form a cycle".into());
        }
        if let Some(root) = self.root
            && self.nodes[root].red
        {
            return Err("the root is red".into());
        }
        let keys = self.keys();
        if let Some(pair) = keys.windows(2).find(|pair| pair[0] >= pair[1]) {
            return Err(format!("keys out of order: {} before {}", pair[0], pair[1]));
        }
        self.black_height(self.root)?;
        Ok(keys.len())
    }

    /// The black height of the subtree at `node`, checking colors and parent links.
    fn black_height(&self, node: Option<usize>) -> Result<usize, String> {
        let Some(index) = node else {
            return Ok(1);
        };
        let node = &self.nodes[index];
        if !node.parent_ok {
            return Err(format!("node {} has a wrong parent link", node.key));
        }
        let red_child = [node.left, node.right]
            .into_iter()
            .flatten()
            .any(|child| self.nodes[child].red);
        if node.red && red_child {
            return Err(format!("red node {} has a red child", node.key));
        }
        let left = self.black_height(node.left)?;
        let right = self.black_height(node.right)?;
        if left != right {
            return Err(format!(
                "black heights differ below {}: {left} vs {right}",
                node.key
            ));
        }
        Ok(left + usize::from(!node.red))
    }
}
