#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief ONNX Einsum: its equation resolved against the inputs' shapes, and its lowering onto
/// reductions, transposes, reshapes and (batched) matmuls, so that the rules, the interpreter and
/// training see the contraction (an attention's `bhqd,bhkd->bhqk` is a batched matmul). A form with
/// a label repeated within one term (a diagonal, `ii->i`) has no such lowering and stays opaque.

#include <goopt/io/onnx/importer.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace goopt::io::detail {

/// An Einsum equation resolved against its inputs: every axis named by a label, a letter by its
/// character code and an ellipsis's axes by negative labels counted from the right (-1 the last),
/// so that ellipses of different ranks line up right-aligned as they broadcast.
struct einsum_labels {
    std::vector<std::vector<int>> inputs;  ///< each input's axes, in order
    std::vector<int> output;               ///< the output's axes, in order
    std::map<int, std::int64_t> extent;    ///< each label's extent, broadcast over the inputs
};

/// The labels of `equation` on inputs `in`; the output's terms as written, or else (implicit mode)
/// the ellipsis's axes and then every letter that occurs once, in alphabetical order. A label's
/// extents must agree across the inputs, or be 1 where another is larger (they broadcast). nullopt
/// where the equation does not fit the inputs.
inline std::optional<einsum_labels> einsum_resolve(const std::string& equation,
                                                   const std::vector<ops::tensor_type>& in) {
    std::string eq;
    for (char c : equation)
        if (c != ' ') eq += c;
    const auto arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms;
    for (std::size_t at = 0;;) {
        const auto comma = lhs.find(',', at);
        terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    if (terms.size() != in.size() || in.empty()) return std::nullopt;
    auto is_letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
    einsum_labels r;
    std::map<int, int> count;
    std::int64_t ellipsis_rank = 0;
    auto meet = [&](int label, std::int64_t d) {
        auto [it, fresh] = r.extent.emplace(label, d);
        if (fresh || it->second == d || d == 1) return true;
        if (it->second != 1) return false;
        it->second = d;
        return true;
    };
    for (std::size_t k = 0; k < terms.size(); ++k) {
        const std::string& t = terms[k];
        const auto dots = t.find("...");
        const std::string letters = dots == std::string::npos ? t : t.substr(0, dots) + t.substr(dots + 3);
        if (!std::ranges::all_of(letters, is_letter)) return std::nullopt;
        const ops::shape& d = in[k].dims;
        if (letters.size() > d.rank() || (dots == std::string::npos && letters.size() != d.rank())) return std::nullopt;
        const std::size_t spread = d.rank() - letters.size();  // the ellipsis's axes in this input
        ellipsis_rank = std::max(ellipsis_rank, static_cast<std::int64_t>(spread));
        std::vector<int>& axes = r.inputs.emplace_back();
        for (std::size_t i = 0; i < letters.size(); ++i) {
            if (dots != std::string::npos && i == dots)
                for (std::size_t e = 0; e < spread; ++e) axes.push_back(-static_cast<int>(spread - e));
            axes.push_back(letters[i]);
            ++count[letters[i]];
        }
        if (dots != std::string::npos && dots == letters.size())
            for (std::size_t e = 0; e < spread; ++e) axes.push_back(-static_cast<int>(spread - e));
        for (std::size_t a = 0; a < axes.size(); ++a)
            if (!meet(axes[a], d[a])) return std::nullopt;
    }
    std::string rhs;
    if (arrow != std::string::npos) {
        rhs = eq.substr(arrow + 2);
    } else {
        rhs = "...";
        for (const auto& [c, k] : count)
            if (k == 1) rhs += static_cast<char>(c);
    }
    bool dots_out = false;
    for (std::size_t i = 0; i < rhs.size(); ++i) {
        if (rhs.compare(i, 3, "...") == 0) {
            if (std::exchange(dots_out, true)) return std::nullopt;
            for (auto e = ellipsis_rank; e > 0; --e) r.output.push_back(-static_cast<int>(e));
            i += 2;
        } else if (!is_letter(rhs[i]) || !count.contains(rhs[i]) ||
                   std::ranges::find(r.output, static_cast<int>(rhs[i])) != r.output.end()) {
            return std::nullopt;
        } else {
            r.output.push_back(rhs[i]);
        }
    }
    if (r.output.size() > ops::max_rank) return std::nullopt;
    return r;
}

/// Einsum's output type from its equation (einsum_resolve), where ONNX 1.12's shape inference gives
/// only the rank. nullopt where the equation does not fit the inputs.
inline std::optional<ops::tensor_type> einsum_output_type(const std::string& equation,
                                                          const std::vector<ops::tensor_type>& in) {
    const auto r = einsum_resolve(equation, in);
    if (!r) return std::nullopt;
    ops::tensor_type out{{}, in[0].type};
    for (const int label : r->output) out.dims.push_back(r->extent.at(label));
    return out;
}

/// Einsum as graph ops. The inputs are contracted left to right, each pair as one matmul: first
/// every label that neither the other operand, a later input nor the output names is summed out
/// (reduce_sum), then each operand is transposed to [shared labels the result keeps, own labels,
/// labels summed over] and reshaped to [kept..., M, K] and [kept..., K, N]. An axis of extent 1
/// where the label is larger elsewhere is dropped first (it broadcasts). The result is transposed
/// to the output's order at the end.
inline void onnx_importer::convert_einsum(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n), equation = attr_string(n, "equation", "");
    std::vector<ops::tensor_type> types;
    for (int k = 0; k < n.input_size(); ++k) types.push_back(type_in(n, k));
    const auto spec = einsum_resolve(equation, types);
    if (!spec) {
        std::string shapes;
        for (const auto& t : types) shapes += concat(shapes.empty() ? "" : ", ", t.dims.to_string());
        fail(n, concat("equation '", equation, "' does not fit its inputs ", shapes),
             "one comma-separated term of letters (and at most one '...') per input, naming each of its axes, "
             "a letter's extents equal or 1 across the inputs, and an output of letters the inputs name");
    }
    for (std::size_t k = 0; k < types.size(); ++k) {
        const auto& labels = spec->inputs[k];
        if (std::set<int>(labels.begin(), labels.end()).size() != labels.size())
            no_kind("a label repeated within one term (a diagonal)", "each label at most once per term");
        if (!ops::is_floating(types[k].type)) no_kind("integer operands", "floating-point operands");
    }
    const std::size_t count = types.size();
    // the labels still needed after input j is contracted: the output's and those of inputs after j
    auto later = [&](std::size_t j) {
        std::set<int> s(spec->output.begin(), spec->output.end());
        for (std::size_t k = j + 1; k < count; ++k) s.insert(spec->inputs[k].begin(), spec->inputs[k].end());
        return s;
    };
    // a result of more axes than a shape holds has no lowering (checked before any op is added)
    std::set<int> seen;
    for (std::size_t j = 0; j < count; ++j) {
        seen.insert(spec->inputs[j].begin(), spec->inputs[j].end());
        const auto keep = later(j);
        if (std::ranges::count_if(seen, [&](int l) { return keep.contains(l); }) > static_cast<long>(ops::max_rank))
            no_kind(concat("an intermediate product of more than ", ops::max_rank, " axes"),
                    concat("at most ", ops::max_rank, " axes kept after each input"));
    }

    struct operand {
        graph::tensor_id t;
        std::vector<int> labels;
    };
    auto extents = [&](const std::vector<int>& labels) {
        ops::shape s;
        for (const int l : labels) s.push_back(spec->extent.at(l));
        return s;
    };
    // sums out the labels `keep` does not hold
    auto sum_out = [&](operand x, const std::set<int>& keep, const std::string& part) {
        ints axes;
        std::vector<int> left;
        for (std::size_t a = 0; a < x.labels.size(); ++a) {
            if (keep.contains(x.labels[a])) left.push_back(x.labels[a]);
            else axes.push_back(static_cast<std::int64_t>(a));
        }
        if (axes.empty()) return x;
        return operand{add1(ops::op_kind::reduce_sum, {x.t}, {{ops::attr_id::axes, axes}, {ops::attr_id::keepdims, 0}},
                            name + part),
                       left};
    };
    auto permute = [&](operand x, const std::vector<int>& order, const std::string& part) {
        if (x.labels == order) return x;
        ints perm;
        for (const int l : order) perm.push_back(std::ranges::find(x.labels, l) - x.labels.begin());
        return operand{view(ops::op_kind::transpose, x.t, {{ops::attr_id::perm, perm}}, name + part), order};
    };
    // the operands' reshapes are shared views (onnx_importer::view): Q, K and V of one input stay mergeable
    auto reshaped = [&](graph::tensor_id t, const ops::shape& dims, const std::string& part) {
        if (g_.type_of(t).dims == dims) return t;
        return view(ops::op_kind::reshape, t, {{ops::attr_id::shape, ints(dims.begin(), dims.end())}}, name + part);
    };
    auto product = [](const ops::shape& s, std::size_t from, std::size_t to) {
        std::int64_t p = 1;
        for (std::size_t a = from; a < to; ++a) p *= s[a];
        return p;
    };

    std::vector<operand> in;
    for (std::size_t k = 0; k < count; ++k) {
        operand x{tensor_in(n, static_cast<int>(k)), {}};
        const ops::shape& d = types[k].dims;
        ops::shape kept;
        for (std::size_t a = 0; a < d.rank(); ++a) {
            const int l = spec->inputs[k][a];
            if (d[a] == 1 && spec->extent.at(l) > 1) continue;  // broadcast: the label is larger elsewhere
            x.labels.push_back(l);
            kept.push_back(d[a]);
        }
        x.t = reshaped(x.t, kept, concat("/input", k, "_broadcast"));
        in.push_back(std::move(x));
    }
    operand acc = in[0];
    for (std::size_t j = 1; j < count; ++j) {
        const std::string part = count > 2 ? concat("/", j) : std::string();
        std::set<int> keep = later(j - 1);  // the output's and those of inputs j and after
        acc = sum_out(acc, keep, part + "/sum_a");
        std::set<int> keep_b = later(j);
        keep_b.insert(acc.labels.begin(), acc.labels.end());
        operand b = sum_out(in[j], keep_b, part + "/sum_b");
        const std::set<int> after = later(j), in_b(b.labels.begin(), b.labels.end());
        std::vector<int> batch, free_a, summed, free_b;
        for (const int l : acc.labels) {
            if (!in_b.contains(l)) free_a.push_back(l);
            else if (after.contains(l)) batch.push_back(l);
            else summed.push_back(l);
        }
        for (const int l : b.labels)
            if (std::ranges::find(acc.labels, l) == acc.labels.end()) free_b.push_back(l);
        auto cat = [](std::initializer_list<const std::vector<int>*> parts) {
            std::vector<int> r;
            for (const auto* p : parts) r.insert(r.end(), p->begin(), p->end());
            return r;
        };
        const operand a = permute(acc, cat({&batch, &free_a, &summed}), part + "/transpose_a");
        b = permute(b, cat({&batch, &summed, &free_b}), part + "/transpose_b");
        // [batch..., M, K] x [batch..., K, N], the batch axes flattened to one where they would not fit
        const ops::shape ea = extents(a.labels), eb = extents(b.labels);
        ops::shape lead;
        if (batch.size() + 2 <= ops::max_rank) {
            for (std::size_t k = 0; k < batch.size(); ++k) lead.push_back(ea[k]);
        } else {
            lead.push_back(product(ea, 0, batch.size()));
        }
        const std::size_t nb = batch.size(), na = free_a.size(), ns = summed.size();
        const std::int64_t m = product(ea, nb, nb + na), kk = product(ea, nb + na, nb + na + ns),
                           nn = product(eb, nb + ns, eb.rank());
        ops::shape sa = lead, sb = lead;
        sa.push_back(m);
        sa.push_back(kk);
        sb.push_back(kk);
        sb.push_back(nn);
        const graph::tensor_id mm =
            add1(ops::op_kind::matmul, {reshaped(a.t, sa, part + "/lhs"), reshaped(b.t, sb, part + "/rhs")}, {},
                 name + part);
        const std::vector<int> result = cat({&batch, &free_a, &free_b});
        acc = operand{reshape(mm, extents(result), name + part + "/unflatten"), result};
    }
    acc = sum_out(acc, std::set<int>(spec->output.begin(), spec->output.end()), "/sum");
    acc = permute(acc, spec->output, "/transpose");
    bind(n, 0, acc.t);
}

}  // namespace goopt::io::detail
