//! Control-flow graph of one PTX function: basic blocks, edges (a `petgraph`
//! graph with a virtual exit node), dominator and post-dominator trees,
//! reverse post-order and natural loops.
//!
//! Owns: block formation from the flat instruction list, and the graph
//! facts every analysis asks for (`dominates`, `ipdom`, loop membership).
//! Does not own: registers or values (see `ssa`).

use super::inst::{Flow, Inst};
use petgraph::algo::dominators::{simple_fast, Dominators};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::Reversed;
use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct Block {
    /// Instruction index range `[start, end)`.
    pub start: usize,
    pub end: usize,
    pub succs: Vec<usize>,
    pub preds: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct Loop {
    pub header: usize,
    /// Blocks of the loop, header included, sorted.
    pub blocks: Vec<usize>,
    /// Sources of back edges to the header.
    pub latches: Vec<usize>,
    /// Edges `(inside, outside)` leaving the loop.
    pub exits: Vec<(usize, usize)>,
    /// Index of the enclosing loop.
    pub parent: Option<usize>,
}

pub struct Cfg {
    pub blocks: Vec<Block>,
    /// Block of each instruction.
    pub block_of: Vec<usize>,
    /// The graph: nodes `0..n` are blocks, node `n` is the virtual exit.
    pub graph: DiGraph<(), ()>,
    pub dom: Dominators<NodeIndex>,
    pub pdom: Dominators<NodeIndex>,
    /// Reverse post-order of reachable blocks.
    pub rpo: Vec<usize>,
    /// Position of each block in `rpo` (`usize::MAX` if unreachable).
    pub rpo_index: Vec<usize>,
    pub loops: Vec<Loop>,
    /// Innermost loop of each block.
    pub loop_of: Vec<Option<usize>>,
    /// True when a retreating edge is not a back edge (irreducible CFG).
    pub irreducible: bool,
}

impl Cfg {
    /// Build the CFG. `labels` maps label names to the index of the
    /// instruction they precede; `tables` maps `.branchtargets` labels to
    /// their target lists; `noreturn(i)` says a call never returns.
    pub fn build(
        insts: &[Inst<'_>],
        labels: &rustc_hash::FxHashMap<&str, usize>,
        tables: &HashMap<&str, Vec<&str>>,
        noreturn: impl Fn(&Inst<'_>) -> bool,
    ) -> Cfg {
        let n = insts.len();
        // leaders
        let mut leader = vec![false; n + 1];
        if n > 0 {
            leader[0] = true;
        }
        for &i in labels.values() {
            if i <= n {
                leader[i] = true;
            }
        }
        for (i, inst) in insts.iter().enumerate() {
            if inst.flow() != Flow::Next || noreturn(inst) {
                leader[i + 1] = true;
            }
        }
        let mut blocks = Vec::new();
        let mut block_of = vec![0; n];
        let mut s = 0;
        for (i, &lead) in leader.iter().enumerate().skip(1) {
            if lead || i == n {
                if i > s {
                    blocks.push(Block { start: s, end: i, succs: vec![], preds: vec![] });
                }
                s = i;
            }
        }
        if blocks.is_empty() {
            // an empty body still gets one (empty) block
            blocks.push(Block { start: 0, end: 0, succs: vec![], preds: vec![] });
        }
        let mut start_block = HashMap::new();
        for (b, blk) in blocks.iter().enumerate() {
            start_block.insert(blk.start, b);
            for bo in block_of.iter_mut().take(blk.end).skip(blk.start) {
                *bo = b;
            }
        }
        let target = |l: &str| labels.get(l).and_then(|i| start_block.get(i)).copied();
        let nb = blocks.len();
        for blk in blocks.iter_mut() {
            let (st, en) = (blk.start, blk.end);
            let mut succs = Vec::new();
            let fall = if en < n { start_block.get(&en).copied() } else { None };
            if en == st {
                blk.succs = succs;
                continue;
            }
            let last = &insts[en - 1];
            let guarded = last.ast.guard.is_some();
            match last.flow() {
                Flow::Next => {
                    if !noreturn(last) {
                        succs.extend(fall);
                    }
                }
                Flow::Branch(l) => {
                    succs.extend(target(l));
                    if guarded {
                        succs.extend(fall);
                    }
                }
                Flow::Indirect(t) => {
                    if let Some(ts) = tables.get(t) {
                        for l in ts {
                            succs.extend(target(l));
                        }
                    }
                    if guarded {
                        succs.extend(fall);
                    }
                }
                Flow::Exit => {
                    if guarded {
                        succs.extend(fall);
                    }
                }
            }
            let mut seen = Vec::new();
            succs.retain(|s| {
                if seen.contains(s) {
                    false
                } else {
                    seen.push(*s);
                    true
                }
            });
            blk.succs = succs;
        }
        for b in 0..nb {
            for s in blocks[b].succs.clone() {
                blocks[s].preds.push(b);
            }
        }
        let mut graph = DiGraph::with_capacity(nb + 1, nb * 2);
        for _ in 0..=nb {
            graph.add_node(());
        }
        let exit = NodeIndex::new(nb);
        for (b, blk) in blocks.iter().enumerate() {
            for &s in &blk.succs {
                graph.add_edge(NodeIndex::new(b), NodeIndex::new(s), ());
            }
            if blk.succs.is_empty() {
                graph.add_edge(NodeIndex::new(b), exit, ());
            }
        }
        // blocks that cannot reach the exit (infinite loops) get an edge to it
        let mut reaches = vec![false; nb + 1];
        let mut stack = vec![nb];
        reaches[nb] = true;
        while let Some(x) = stack.pop() {
            for p in graph.neighbors_directed(NodeIndex::new(x), petgraph::Direction::Incoming) {
                if !reaches[p.index()] {
                    reaches[p.index()] = true;
                    stack.push(p.index());
                }
            }
        }
        for (b, r) in reaches.iter().enumerate().take(nb) {
            if !r {
                graph.add_edge(NodeIndex::new(b), exit, ());
            }
        }
        let dom = simple_fast(&graph, NodeIndex::new(0));
        let pdom = simple_fast(Reversed(&graph), exit);
        let (rpo, rpo_index) = reverse_post_order(&blocks);
        let mut cfg =
            Cfg { blocks, block_of, graph, dom, pdom, rpo, rpo_index, loops: vec![], loop_of: vec![None; nb], irreducible: false };
        cfg.find_loops();
        cfg
    }

    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    pub fn reachable(&self, b: usize) -> bool {
        self.rpo_index[b] != usize::MAX
    }

    /// Does block `a` dominate block `b`?
    pub fn dominates(&self, a: usize, b: usize) -> bool {
        if !self.reachable(b) {
            return false;
        }
        self.dom.dominators(NodeIndex::new(b)).is_some_and(|mut it| it.any(|d| d.index() == a))
    }

    pub fn idom(&self, b: usize) -> Option<usize> {
        self.dom.immediate_dominator(NodeIndex::new(b)).map(|n| n.index())
    }

    /// Immediate post-dominator; `None` when it is the virtual exit.
    pub fn ipdom(&self, b: usize) -> Option<usize> {
        self.pdom.immediate_dominator(NodeIndex::new(b)).map(|n| n.index()).filter(|&i| i < self.blocks.len())
    }

    /// Is `b` inside loop `l`?
    pub fn in_loop(&self, b: usize, l: usize) -> bool {
        self.loops[l].blocks.binary_search(&b).is_ok()
    }

    fn find_loops(&mut self) {
        let nb = self.blocks.len();
        let mut by_header: HashMap<usize, Vec<usize>> = HashMap::new();
        for &b in &self.rpo {
            for &s in &self.blocks[b].succs {
                if self.rpo_index[s] <= self.rpo_index[b] {
                    if self.dominates(s, b) {
                        by_header.entry(s).or_default().push(b);
                    } else {
                        self.irreducible = true;
                    }
                }
            }
        }
        let mut headers: Vec<usize> = by_header.keys().copied().collect();
        headers.sort_by_key(|h| self.rpo_index[*h]);
        for h in headers {
            let latches = by_header.remove(&h).unwrap_or_default();
            let mut in_loop = vec![false; nb];
            in_loop[h] = true;
            let mut stack: Vec<usize> = latches.clone();
            while let Some(x) = stack.pop() {
                if in_loop[x] {
                    continue;
                }
                in_loop[x] = true;
                for &p in &self.blocks[x].preds {
                    if !in_loop[p] && self.reachable(p) {
                        stack.push(p);
                    }
                }
            }
            let blocks: Vec<usize> = (0..nb).filter(|&b| in_loop[b]).collect();
            let mut exits = Vec::new();
            for &b in &blocks {
                for &s in &self.blocks[b].succs {
                    if !in_loop[s] {
                        exits.push((b, s));
                    }
                }
            }
            self.loops.push(Loop { header: h, blocks, latches, exits, parent: None });
        }
        // nesting: visit loops from largest to smallest; a loop's parent is
        // the innermost loop seen so far that holds its header
        let mut order: Vec<usize> = (0..self.loops.len()).collect();
        order.sort_by_key(|&l| std::cmp::Reverse(self.loops[l].blocks.len()));
        for l in order {
            self.loops[l].parent = self.loop_of[self.loops[l].header];
            for i in 0..self.loops[l].blocks.len() {
                let b = self.loops[l].blocks[i];
                self.loop_of[b] = Some(l);
            }
        }
    }

    /// Blocks reachable from `from` (around loops too) without passing
    /// `stop`, sorted.
    pub fn region(&self, from: &[usize], stop: Option<usize>) -> Vec<usize> {
        let mut seen = vec![false; self.len()];
        let mut stack: Vec<usize> = from.to_vec();
        let mut out = Vec::new();
        while let Some(x) = stack.pop() {
            if Some(x) == stop || seen[x] {
                continue;
            }
            seen[x] = true;
            out.push(x);
            stack.extend(self.blocks[x].succs.iter().copied());
        }
        out.sort_unstable();
        out
    }

    /// Loops containing `b`, innermost first.
    pub fn loops_containing(&self, b: usize) -> Vec<usize> {
        let mut v = Vec::new();
        let mut l = self.loop_of[b];
        while let Some(x) = l {
            v.push(x);
            l = self.loops[x].parent;
        }
        v
    }
}

fn reverse_post_order(blocks: &[Block]) -> (Vec<usize>, Vec<usize>) {
    let n = blocks.len();
    let mut visited = vec![false; n];
    let mut post = Vec::with_capacity(n);
    // iterative DFS
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    if n > 0 {
        visited[0] = true;
    }
    while let Some(&mut (b, ref mut i)) = stack.last_mut() {
        if *i < blocks[b].succs.len() {
            let s = blocks[b].succs[*i];
            *i += 1;
            if !visited[s] {
                visited[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
            stack.pop();
        }
    }
    post.reverse();
    let mut idx = vec![usize::MAX; n];
    for (i, &b) in post.iter().enumerate() {
        idx[b] = i;
    }
    (post, idx)
}
