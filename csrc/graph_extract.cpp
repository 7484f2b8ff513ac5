// One pass over model.get_ordered_ops() -> node/edge arrays for HSDAG features.
// The definitions of every array live in ov_autoplace/graph.py (module
// docstring); tests/reference_graph.py re-implements them in pure Python and
// tests/test_graph.py checks the two agree.
#include "graph_extract.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <openvino/core/node.hpp>
#include <openvino/op/constant.hpp>
#include <openvino/op/convolution.hpp>
#include <openvino/op/einsum.hpp>
#include <openvino/op/group_conv.hpp>
#include <openvino/op/matmul.hpp>
#include <openvino/op/parameter.hpp>
#include <openvino/op/result.hpp>
#include <openvino/op/scaled_dot_product_attention.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace ov_autoplace {
namespace {

enum Role : int8_t { kCompute = 0, kParameter = 1, kConstant = 2, kResult = 3 };

// ---------------------------------------------------------------- numpy glue

// Moves a vector into a numpy array that owns it (no copy).
template <typename T>
py::array_t<T> to_numpy(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
    if (values.empty()) {
        return py::array_t<T>(shape);  // zero-size; numpy allocates nothing useful
    }
    auto* heap = new std::vector<T>(std::move(values));
    py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>(shape, heap->data(), owner);
}

// Friendly names come from arbitrary frontends; never fail on bad UTF-8.
py::str to_pystr(const std::string& s) {
    PyObject* obj = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
    if (obj == nullptr) {
        throw py::error_already_set();
    }
    return py::reinterpret_steal<py::str>(obj);
}

py::list to_pylist(const std::vector<std::string>& items) {
    py::list out(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
        out[i] = to_pystr(items[i]);
    }
    return out;
}

// ---------------------------------------------------------------- shape math

// Product of the dims of a static shape as a double (FLOP formulas).
double prod(const ov::PartialShape& ps, size_t begin = 0, size_t end = SIZE_MAX) {
    double p = 1.0;
    const size_t n = std::min(end, ps.size());
    for (size_t i = begin; i < n; ++i) {
        p *= static_cast<double>(ps[i].get_length());
    }
    return p;
}

// Bytes of one output: ceil(bitwidth * elements / 8); -1 if the shape or the
// element type is dynamic, or the tensor holds strings (no fixed width).
int64_t output_bytes(const ov::element::Type& et, const ov::PartialShape& ps) {
    if (et.is_dynamic() || et == ov::element::string || ps.is_dynamic()) {
        return -1;
    }
    int64_t elements = 1;
    for (size_t i = 0; i < ps.size(); ++i) {
        elements *= ps[i].get_length();
    }
    const int64_t bits = static_cast<int64_t>(et.bitwidth()) * elements;
    return (bits + 7) / 8;
}

double output_elements(const ov::Node& node) {
    double total = 0.0;
    for (size_t i = 0; i < node.get_output_size(); ++i) {
        total += prod(node.get_output_partial_shape(i));
    }
    return total;
}

// Einsum: (inputs == 1 ? 1 : 2 * (inputs - 1)) * prod(size of every distinct
// label). Falls back to the element count for ellipsis or anything unparsable.
double einsum_flops(const ov::op::v7::Einsum& op) {
    std::string eq;
    for (char c : op.get_equation()) {
        if (c != ' ') eq.push_back(c);
    }
    const std::string lhs = eq.substr(0, eq.find("->"));
    if (lhs.find('.') != std::string::npos) {
        return output_elements(op);
    }
    std::vector<std::string> terms(1);
    for (char c : lhs) {
        if (c == ',') {
            terms.emplace_back();
        } else {
            terms.back().push_back(c);
        }
    }
    if (terms.size() != op.get_input_size()) {
        return output_elements(op);
    }
    std::unordered_map<char, int64_t> label_size;
    for (size_t t = 0; t < terms.size(); ++t) {
        const ov::PartialShape& ps = op.get_input_partial_shape(t);
        if (ps.size() != terms[t].size()) {
            return output_elements(op);
        }
        for (size_t j = 0; j < terms[t].size(); ++j) {
            int64_t& s = label_size[terms[t][j]];
            s = std::max(s, ps[j].get_length());
        }
    }
    double p = 1.0;
    for (const auto& kv : label_size) {
        p *= static_cast<double>(kv.second);
    }
    const size_t k = terms.size();
    return (k <= 1 ? 1.0 : 2.0 * static_cast<double>(k - 1)) * p;
}

double compute_flops(const ov::Node& node, Role role) {
    if (role != kCompute) {
        return 0.0;
    }
    for (size_t i = 0; i < node.get_input_size(); ++i) {
        if (node.get_input_partial_shape(i).is_dynamic()) return -1.0;
    }
    for (size_t i = 0; i < node.get_output_size(); ++i) {
        if (node.get_output_partial_shape(i).is_dynamic()) return -1.0;
    }
    const size_t n_in = node.get_input_size();

    if (ov::is_type<ov::op::v1::Convolution>(&node) && n_in >= 2) {
        // weights [Cout, Cin, k...]: 2 * |out| * Cin * prod(k)
        const auto& w = node.get_input_partial_shape(1);
        if (w.size() >= 2) {
            return 2.0 * prod(node.get_output_partial_shape(0)) * prod(w, 1);
        }
    } else if (ov::is_type<ov::op::v1::GroupConvolution>(&node) && n_in >= 2) {
        // weights [G, Cout/G, Cin/G, k...]: 2 * |out| * (Cin/G) * prod(k)
        const auto& w = node.get_input_partial_shape(1);
        if (w.size() >= 3) {
            return 2.0 * prod(node.get_output_partial_shape(0)) * prod(w, 2);
        }
    } else if (ov::is_type<ov::op::v1::ConvolutionBackpropData>(&node) && n_in >= 2) {
        // weights [Cin, Cout, k...]: every input element scatters into
        // Cout * prod(k) outputs: 2 * |in| * Cout * prod(k)
        const auto& w = node.get_input_partial_shape(1);
        if (w.size() >= 2) {
            return 2.0 * prod(node.get_input_partial_shape(0)) * prod(w, 1);
        }
    } else if (ov::is_type<ov::op::v1::GroupConvolutionBackpropData>(&node) && n_in >= 2) {
        // weights [G, Cin/G, Cout/G, k...]: 2 * |in| * (Cout/G) * prod(k)
        const auto& w = node.get_input_partial_shape(1);
        if (w.size() >= 3) {
            return 2.0 * prod(node.get_input_partial_shape(0)) * prod(w, 2);
        }
    } else if (const auto* mm = ov::as_type<const ov::op::v0::MatMul>(&node)) {
        // 2 * |out| * K, K = contracted dim of A (rank-1 A is never transposed)
        const auto& a = node.get_input_partial_shape(0);
        if (a.size() == 1) {
            return 2.0 * prod(node.get_output_partial_shape(0)) * static_cast<double>(a[0].get_length());
        }
        if (a.size() >= 2) {
            const size_t kdim = mm->get_transpose_a() ? a.size() - 2 : a.size() - 1;
            return 2.0 * prod(node.get_output_partial_shape(0)) * static_cast<double>(a[kdim].get_length());
        }
    } else if (ov::is_type<ov::op::v13::ScaledDotProductAttention>(&node) && n_in >= 3) {
        // Q [..., L, E], K [..., S, E], V [..., S, Ev]; B = prod of the
        // (broadcast) batch dims, read off the output [..., L, Ev].
        const auto& q = node.get_input_partial_shape(0);
        const auto& k = node.get_input_partial_shape(1);
        const auto& v = node.get_input_partial_shape(2);
        const auto& o = node.get_output_partial_shape(0);
        if (q.size() >= 2 && k.size() >= 2 && v.size() >= 2 && o.size() >= 2) {
            const double B = prod(o, 0, o.size() - 2);
            const double L = static_cast<double>(q[q.size() - 2].get_length());
            const double E = static_cast<double>(q[q.size() - 1].get_length());
            const double S = static_cast<double>(k[k.size() - 2].get_length());
            const double Ev = static_cast<double>(v[v.size() - 1].get_length());
            return 2.0 * B * L * S * E + 2.0 * B * L * S * Ev;
        }
    } else if (const auto* es = ov::as_type<const ov::op::v7::Einsum>(&node)) {
        return einsum_flops(*es);
    }
    return output_elements(node);
}

}  // namespace

py::dict extract_graph_arrays(const ov::Model& model, int pos_dim, int fractal_radius) {
    if (pos_dim <= 0 || pos_dim % 2 != 0) {
        throw std::invalid_argument("pos_dim must be a positive even integer, got " + std::to_string(pos_dim));
    }
    if (fractal_radius < 2) {
        throw std::invalid_argument("fractal_radius must be >= 2 (a slope needs two radii), got " +
                                    std::to_string(fractal_radius));
    }

    const std::vector<std::shared_ptr<ov::Node>> ops = model.get_ordered_ops();
    if (ops.size() > static_cast<size_t>(INT32_MAX)) {
        throw std::length_error("model has too many ops for int32 node indices");
    }
    const int32_t N = static_cast<int32_t>(ops.size());

    std::unordered_map<const ov::Node*, int32_t> index;
    index.reserve(ops.size() * 2);
    for (int32_t i = 0; i < N; ++i) {
        index.emplace(ops[i].get(), i);
    }

    std::vector<std::string> names(N), op_types(N), op_versions(N), out_etype(N);
    std::vector<int8_t> role(N);
    std::vector<int32_t> num_outputs(N), out_rank(N), in_degree(N, 0), out_degree(N, 0), topo(N), depth(N, 0);
    std::vector<int64_t> out_shape(static_cast<size_t>(N) * kMaxRank, 0), out_bytes(N);
    std::vector<double> flops(N);
    std::vector<int32_t> e_src, e_dst, e_sport, e_dport;
    std::vector<int64_t> e_bytes;

    for (int32_t i = 0; i < N; ++i) {
        const ov::Node& node = *ops[i];
        names[i] = node.get_friendly_name();
        const ov::DiscreteTypeInfo& ti = node.get_type_info();
        op_types[i] = ti.name ? ti.name : "";
        op_versions[i] = ti.version_id ? ti.version_id : "";
        topo[i] = i;

        Role r = kCompute;
        if (ov::is_type<ov::op::v0::Parameter>(&node)) {
            r = kParameter;
        } else if (ov::is_type<ov::op::v0::Constant>(&node)) {
            r = kConstant;
        } else if (ov::is_type<ov::op::v0::Result>(&node)) {
            r = kResult;
        }
        role[i] = r;

        const size_t n_out = node.get_output_size();
        num_outputs[i] = static_cast<int32_t>(n_out);
        if (n_out == 0) {
            out_etype[i] = "";
            out_rank[i] = -1;
            out_bytes[i] = 0;
        } else {
            out_etype[i] = node.get_output_element_type(0).get_type_name();
            const ov::PartialShape& ps = node.get_output_partial_shape(0);
            if (ps.rank().is_dynamic()) {
                out_rank[i] = -1;
            } else {
                out_rank[i] = static_cast<int32_t>(ps.size());
                const size_t kept = std::min<size_t>(ps.size(), kMaxRank);
                for (size_t d = 0; d < kept; ++d) {
                    out_shape[static_cast<size_t>(i) * kMaxRank + d] = ps[d].is_static() ? ps[d].get_length() : -1;
                }
            }
            int64_t total = 0;
            for (size_t o = 0; o < n_out; ++o) {
                const int64_t b = output_bytes(node.get_output_element_type(o), node.get_output_partial_shape(o));
                if (b < 0) {
                    total = -1;
                    break;
                }
                total += b;
            }
            out_bytes[i] = total;
        }
        flops[i] = compute_flops(node, r);

        for (size_t p = 0; p < node.get_input_size(); ++p) {
            const ov::Output<ov::Node> src = node.input_value(p);
            const auto it = index.find(src.get_node());
            if (it == index.end()) {
                throw std::runtime_error("input " + std::to_string(p) + " of '" + names[i] +
                                         "' comes from an op that is not in model.get_ordered_ops()");
            }
            const int32_t s = it->second;
            if (s >= i) {
                throw std::runtime_error("get_ordered_ops() is not topological at '" + names[i] + "'");
            }
            e_src.push_back(s);
            e_dst.push_back(i);
            e_sport.push_back(static_cast<int32_t>(src.get_index()));
            e_dport.push_back(static_cast<int32_t>(p));
            e_bytes.push_back(output_bytes(src.get_element_type(), src.get_partial_shape()));
            ++in_degree[i];
            ++out_degree[s];
            depth[i] = std::max(depth[i], depth[s] + 1);
        }
    }
    const size_t E = e_src.size();

    // Positional encoding of the topological index.
    std::vector<float> pos_enc(static_cast<size_t>(N) * pos_dim);
    {
        std::vector<double> inv_freq(pos_dim / 2);
        for (int k = 0; k < pos_dim / 2; ++k) {
            inv_freq[k] = 1.0 / std::pow(10000.0, (2.0 * k) / pos_dim);
        }
        for (int32_t i = 0; i < N; ++i) {
            float* row = pos_enc.data() + static_cast<size_t>(i) * pos_dim;
            for (int k = 0; k < pos_dim / 2; ++k) {
                const double a = static_cast<double>(i) * inv_freq[k];
                row[2 * k] = static_cast<float>(std::sin(a));
                row[2 * k + 1] = static_cast<float>(std::cos(a));
            }
        }
    }

    // Fractal dimension: undirected, multi-edges collapsed, truncated BFS.
    std::vector<float> fractal(N, 0.0f);
    if (N > 0) {
        std::vector<std::pair<int32_t, int32_t>> und;
        und.reserve(E);
        for (size_t e = 0; e < E; ++e) {
            const int32_t a = std::min(e_src[e], e_dst[e]);
            const int32_t b = std::max(e_src[e], e_dst[e]);
            if (a != b) und.emplace_back(a, b);
        }
        std::sort(und.begin(), und.end());
        und.erase(std::unique(und.begin(), und.end()), und.end());
        std::vector<int32_t> ptr(static_cast<size_t>(N) + 1, 0), adj(und.size() * 2);
        for (const auto& ab : und) {
            ++ptr[ab.first + 1];
            ++ptr[ab.second + 1];
        }
        for (int32_t v = 0; v < N; ++v) ptr[v + 1] += ptr[v];
        std::vector<int32_t> fill(ptr.begin(), ptr.end() - 1);
        for (const auto& ab : und) {
            adj[fill[ab.first]++] = ab.second;
            adj[fill[ab.second]++] = ab.first;
        }

        const int R = fractal_radius;
        double xm = 0.0;
        for (int r = 1; r <= R; ++r) xm += std::log(static_cast<double>(r));
        xm /= R;
        std::vector<double> xc(R + 1);
        double sxx = 0.0;
        for (int r = 1; r <= R; ++r) {
            xc[r] = std::log(static_cast<double>(r)) - xm;
            sxx += xc[r] * xc[r];
        }

        std::vector<int32_t> seen(N, -1), frontier, next;
        for (int32_t v = 0; v < N; ++v) {
            seen[v] = v;
            frontier.assign(1, v);
            int64_t count = 1;
            double sxy = 0.0;
            for (int r = 1; r <= R; ++r) {
                next.clear();
                for (int32_t u : frontier) {
                    for (int32_t j = ptr[u]; j < ptr[u + 1]; ++j) {
                        const int32_t w = adj[j];
                        if (seen[w] != v) {
                            seen[w] = v;
                            next.push_back(w);
                        }
                    }
                }
                count += static_cast<int64_t>(next.size());
                sxy += xc[r] * std::log(static_cast<double>(count));
                frontier.swap(next);
            }
            fractal[v] = static_cast<float>(sxy / sxx);
        }
    }

    py::dict meta;
    meta["num_nodes"] = N;
    meta["num_edges"] = static_cast<int64_t>(E);
    meta["pos_dim"] = pos_dim;
    meta["fractal_radius"] = fractal_radius;
    meta["max_rank"] = kMaxRank;

    const py::ssize_t n = N;
    const py::ssize_t ne = static_cast<py::ssize_t>(E);
    py::dict d;
    d["names"] = to_pylist(names);
    d["op_types"] = to_pylist(op_types);
    d["op_versions"] = to_pylist(op_versions);
    d["role"] = to_numpy(std::move(role), {n});
    d["out_element_type"] = to_pylist(out_etype);
    d["num_outputs"] = to_numpy(std::move(num_outputs), {n});
    d["out_rank"] = to_numpy(std::move(out_rank), {n});
    d["out_shape"] = to_numpy(std::move(out_shape), {n, static_cast<py::ssize_t>(kMaxRank)});
    d["out_bytes"] = to_numpy(std::move(out_bytes), {n});
    d["flops"] = to_numpy(std::move(flops), {n});
    d["edge_src"] = to_numpy(std::move(e_src), {ne});
    d["edge_dst"] = to_numpy(std::move(e_dst), {ne});
    d["edge_src_port"] = to_numpy(std::move(e_sport), {ne});
    d["edge_dst_port"] = to_numpy(std::move(e_dport), {ne});
    d["edge_bytes"] = to_numpy(std::move(e_bytes), {ne});
    d["in_degree"] = to_numpy(std::move(in_degree), {n});
    d["out_degree"] = to_numpy(std::move(out_degree), {n});
    d["topo_index"] = to_numpy(std::move(topo), {n});
    d["pos_enc"] = to_numpy(std::move(pos_enc), {n, static_cast<py::ssize_t>(pos_dim)});
    d["depth"] = to_numpy(std::move(depth), {n});
    d["fractal_dim"] = to_numpy(std::move(fractal), {n});
    d["meta"] = meta;
    return d;
}

}  // namespace ov_autoplace
