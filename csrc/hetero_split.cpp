// HETERO's split (placement/submodels.py, docs/architecture.md "Computing the split"): the same rounds as the
// reference, with dependency sets as bitsets of 64-bit words that end at their highest set word (as Python ints do),
// so a set costs what its highest bit needs and "empty" is "no words".
#include "hetero_split.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace py = pybind11;

namespace ov_autoplace {
namespace {

using Bits = std::vector<uint64_t>;

void or_in(Bits& a, const Bits& b) {
    if (b.size() > a.size()) a.resize(b.size(), 0);
    for (size_t i = 0; i < b.size(); ++i) a[i] |= b[i];
}

void and_of(Bits& out, const Bits& a, const Bits& b) {
    const size_t m = std::min(a.size(), b.size());
    out.assign(a.begin(), a.begin() + m);
    for (size_t i = 0; i < m; ++i) out[i] &= b[i];
    while (!out.empty() && out.back() == 0) out.pop_back();
}

bool meets(const Bits& a, const Bits& b) {
    const size_t m = std::min(a.size(), b.size());
    for (size_t i = 0; i < m; ++i)
        if (a[i] & b[i]) return true;
    return false;
}

bool within(const Bits& a, const Bits& b) {
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] & ~(i < b.size() ? b[i] : 0)) return false;
    return true;
}

void set_bit(Bits& a, int64_t bit) {
    const size_t word = static_cast<size_t>(bit / 64);
    if (a.size() <= word) a.resize(word + 1, 0);
    a[word] |= uint64_t{1} << (bit % 64);
}

}  // namespace

py::array_t<int64_t> hetero_split(py::array_t<int64_t, py::array::c_style> src_a,
                                  py::array_t<int64_t, py::array::c_style> dst_a,
                                  py::array_t<int64_t, py::array::c_style> own_a,
                                  py::array_t<int64_t, py::array::c_style> cut_a,
                                  py::array_t<int64_t, py::array::c_style> single_a,
                                  py::array_t<int64_t, py::array::c_style> readers_a) {
    const int64_t n = own_a.size(), num_edges = src_a.size();
    if (dst_a.size() != num_edges || single_a.size() != num_edges || readers_a.size() != n)
        throw std::invalid_argument("hetero_split: sizes differ");
    const int64_t *src = src_a.data(), *dst = dst_a.data(), *cut0 = cut_a.data(), *single = single_a.data();
    const int64_t *own = own_a.data(), *readers = readers_a.data();
    for (int64_t e = 0; e < num_edges; ++e)
        if (src[e] < 0 || src[e] >= n || dst[e] < 0 || dst[e] >= n) throw std::out_of_range("hetero_split: edge");
    if (!n && !cut_a.size()) return py::array_t<int64_t>(0);  // nothing to split (a cut edge would be outside)
    std::vector<int64_t> sg(n, 0);  // each node's part root: its part's lowest member
    std::vector<std::vector<int64_t>> in_edges(n), out_edges(n), members(n);
    for (int64_t e = 0; e < num_edges; ++e) {
        in_edges[dst[e]].push_back(e);
        out_edges[src[e]].push_back(e);
    }
    // Bits: the graph inputs first (node order), then cut edges in the order they are cut.
    std::vector<Bits> own_bits(n), in_bits(n), out_bits(n), deps(n), entered(n), cyclic(n), through(n);
    Bits from_input;  // the bits a graph input sets: its own, and a cut edge's out of it
    int64_t next_bit = 0;
    for (int64_t v = 0; v < n; ++v)
        if (own[v]) {
            set_bit(from_input, next_bit);
            set_bit(own_bits[v], next_bit++);
        }
    std::vector<int64_t> edge_bit(num_edges, -1);
    auto cut_edge = [&](int64_t e) {
        if (own[src[e]]) set_bit(from_input, next_bit);
        edge_bit[e] = next_bit;
        set_bit(in_bits[dst[e]], next_bit);
        set_bit(out_bits[src[e]], next_bit);
        ++next_bit;
    };
    for (int64_t k = 0; k < cut_a.size(); ++k) {
        if (cut0[k] < 0 || cut0[k] >= num_edges) throw std::out_of_range("hetero_split: cut edge");
        cut_edge(cut0[k]);
    }
    std::vector<int64_t> dirty;  // the parts to walk in the next round
    struct Walk { int64_t part; Bits owner, leave; };
    std::vector<char> seen(n, 0);
    auto split_part = [&](int64_t p) {  // the part's pieces: its nodes joined by the edges still uncut
        std::vector<int64_t> nodes = std::move(members[p]);
        members[p].clear();
        for (int64_t start : nodes) {  // nodes ascend: each piece is found from its lowest member
            if (seen[start]) continue;
            seen[start] = 1;
            std::vector<int64_t> stack{start};
            while (!stack.empty()) {
                const int64_t v = stack.back();
                stack.pop_back();
                sg[v] = start;
                for (int64_t f : in_edges[v])
                    if (edge_bit[f] < 0 && !seen[src[f]]) { seen[src[f]] = 1; stack.push_back(src[f]); }
                for (int64_t f : out_edges[v])
                    if (edge_bit[f] < 0 && !seen[dst[f]]) { seen[dst[f]] = 1; stack.push_back(dst[f]); }
            }
            dirty.push_back(start);
        }
        for (int64_t v : nodes) {  // in ascending order into their pieces
            seen[v] = 0;
            members[sg[v]].push_back(v);
        }
    };
    for (int64_t v = 0; v < n; ++v) members[0].push_back(v);
    split_part(0);  // the parts of the edges not cut: all dirty at first
    int64_t changed_from = 0;
    while (true) {
        std::vector<Walk> walk;
        for (int64_t p : dirty) {  // a part no cut edge leaves has no cycle through it: it cuts nothing
            Walk w{p, {}, {}};
            for (int64_t v : members[p]) {
                or_in(w.owner, own_bits[v]);
                or_in(w.owner, in_bits[v]);
                or_in(w.leave, out_bits[v]);
            }
            if (!w.leave.empty()) walk.push_back(std::move(w));
        }
        int64_t last = -1;
        for (const Walk& w : walk) last = std::max(last, members[w.part].back());
        for (int64_t v = changed_from; v <= last; ++v) {  // only walked parts read deps, up to their last node
            Bits& d = deps[v];  // in place: its words are reused round after round
            d.assign(own_bits[v].begin(), own_bits[v].end());
            or_in(d, in_bits[v]);
            for (int64_t e : in_edges[v]) or_in(d, deps[src[e]]);
        }
        std::vector<int64_t> added;
        for (const Walk& w : walk) {
            for (int64_t v : members[w.part]) {  // ascending: topological order
                and_of(entered[v], deps[v], w.owner);
                and_of(cyclic[v], deps[v], w.leave);
                Bits& t = through[v];
                t.clear();
                for (int64_t e : in_edges[v]) {
                    const int64_t s = src[e];
                    if (sg[s] != w.part) {  // an input from another part: the whole of entered
                        t = entered[v];
                        break;
                    }
                    or_in(t, through[s]);
                    if (edge_bit[e] >= 0) or_in(t, entered[s]);
                }
                if (cyclic[v].empty()) continue;
                for (int64_t e : in_edges[v]) {
                    const int64_t s = src[e];
                    if (edge_bit[e] >= 0 || meets(cyclic[v], cyclic[s]) || !meets(through[v], entered[s])) continue;
                    // kept whole: the only reader of a node that reads nothing but graph inputs (2026.4)
                    if (!(single[e] && !own[s] && cyclic[s].empty() && within(entered[s], from_input)))
                        added.push_back(e);
                }
            }
        }
        if (added.empty()) break;
        changed_from = n;
        std::vector<int64_t> touched;
        for (int64_t e : added) {
            changed_from = std::min(changed_from, dst[e]);
            cut_edge(e);
            if (!seen[sg[dst[e]]]) { seen[sg[dst[e]]] = 1; touched.push_back(sg[dst[e]]); }
        }
        for (int64_t p : touched) seen[p] = 0;
        dirty.clear();
        for (int64_t p : touched) split_part(p);
    }
    // 2026.4's fallback for the cycles its exception leaves between parts: a node of a part on a cycle is cut from
    // its part (all its uncut inputs), the first by rank, until none is left (docs/architecture.md, "Submodels").
    // Kept up to date rather than found again per cut: a cut splits one part, so only the strongly connected
    // component that held it can change, and only the ranks of nodes in or read by a part that changed.
    std::vector<char> leaf(n), on_cycle(n), on_stack(n), in_scc(n);
    for (int64_t v = 0; v < n; ++v) {  // a node of one reader that reads nothing but graph inputs
        leaf[v] = !own[v] && readers[v] == 1;
        for (int64_t e : in_edges[v]) leaf[v] &= own[src[e]] != 0;
    }
    std::vector<std::vector<int64_t>> exits(n);  // per part root: the cut edges out of its nodes
    for (int64_t e = 0; e < num_edges; ++e)
        if (edge_bit[e] >= 0) exits[sg[src[e]]].push_back(e);
    std::vector<int64_t> scc(n, -1), index(n, -1), low(n), stack, parts, nodes, moved;
    std::vector<std::pair<int64_t, size_t>> work;
    // Each node's rank as a candidate, HETERO 2026.4's keys packed first key highest (~0: none, with no uncut input
    // or its part on no cycle); the lowest is cut, the lowest node on a tie (the first min_element finds)
    std::vector<uint64_t> rank_of(n, ~uint64_t{0});
    std::vector<char> was_on(n, 0), again(n, 0);
    auto again_later = [&](int64_t v) {
        if (!again[v]) again[v] = 1, nodes.push_back(v);
    };
    for (int64_t r = 0; r < n; ++r)  // at first every part is looked at, none on a cycle yet
        if (sg[r] == r) parts.push_back(r), in_scc[r] = 1;
    dirty.clear();
    for (int64_t next_scc = 0;;) {
        int64_t counter = 0;  // Tarjan over `parts` (in_scc set), joined by the cut edges between them
        for (int64_t r : parts) {
            if (index[r] >= 0) continue;
            work.push_back({r, 0});
            index[r] = low[r] = counter++;
            stack.push_back(r);
            on_stack[r] = 1;
            while (!work.empty()) {
                const int64_t v = work.back().first;
                if (work.back().second < exits[v].size()) {
                    const int64_t w = sg[dst[exits[v][work.back().second++]]];
                    if (w == v || !in_scc[w]) continue;
                    if (index[w] < 0) {
                        index[w] = low[w] = counter++;
                        stack.push_back(w);
                        on_stack[w] = 1;
                        work.push_back({w, 0});
                    } else if (on_stack[w]) {
                        low[v] = std::min(low[v], index[w]);
                    }
                    continue;
                }
                work.pop_back();
                if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[v]);
                if (low[v] != index[v]) continue;
                size_t first = stack.size();
                while (stack[--first] != v) {}
                const bool many = stack.size() - first > 1;
                for (size_t k = first; k < stack.size(); ++k)
                    on_stack[stack[k]] = 0, on_cycle[stack[k]] = many, scc[stack[k]] = next_scc;
                ++next_scc;
                stack.resize(first);
            }
        }
        // Ranks that can have changed: the node cut last, the readers of a piece (their source's part is new), the
        // nodes and readers of a part whose verdict changed (candidates or not)
        for (int64_t r : dirty)
            for (int64_t e : exits[r]) again_later(dst[e]);
        for (int64_t r : parts) {
            index[r] = -1, in_scc[r] = 0;
            if (was_on[r] == on_cycle[r]) continue;
            for (int64_t e : exits[r]) again_later(dst[e]);
            for (int64_t v : members[r]) again_later(v);
        }
        for (int64_t v : nodes) {
            again[v] = 0;
            const int64_t r = sg[v];
            uint64_t count = 0;
            bool entered_cycle = false, shared = false, leaf_in = false;
            for (int64_t e : in_edges[v]) {
                const int64_t s = src[e];
                if (edge_bit[e] >= 0) {
                    entered_cycle |= sg[s] != r && on_cycle[sg[s]];
                } else {
                    ++count;
                    shared |= readers[s] > 1;
                    leaf_in |= leaf[s] != 0;
                }
            }
            const bool linear = count == 1 && readers[v] <= 1;
            rank_of[v] = count && on_cycle[r] ? uint64_t{!entered_cycle} << 63 | uint64_t{!shared} << 62 |
                                                    uint64_t{leaf_in} << 61 | uint64_t{linear} << 60 | count
                                              : ~uint64_t{0};
        }
        nodes.clear();
        const int64_t target = std::min_element(rank_of.begin(), rank_of.end()) - rank_of.begin();
        if (rank_of[target] == ~uint64_t{0}) break;
        const int64_t p = sg[target], was = scc[p];
        moved = std::move(exits[p]);
        exits[p].clear();
        for (int64_t e : in_edges[target])
            if (edge_bit[e] < 0) cut_edge(e), moved.push_back(e);
        again_later(target);
        dirty.clear();
        split_part(p);
        for (int64_t e : moved) exits[sg[src[e]]].push_back(e);
        for (int64_t r : dirty) scc[r] = was;  // the pieces stay in their component until it is found again
        parts.clear();
        for (int64_t r = 0; r < n; ++r)
            if (sg[r] == r && scc[r] == was) parts.push_back(r), in_scc[r] = 1, was_on[r] = on_cycle[r];
        for (int64_t r : dirty) was_on[r] = on_cycle[p];  // a piece was what its part was (p is one of them)
    }
    py::array_t<int64_t> out(n);
    std::copy(sg.begin(), sg.end(), out.mutable_data());
    return out;
}

}  // namespace ov_autoplace
