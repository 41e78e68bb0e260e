#pragma once
/// @file
/// @brief The checking reader behind io::graph_from_json: ops in any order, resolved by name, ordered
/// and checked for cycles with the library's own algorithms, every error reported with its place.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/graph_json_format.hpp>
#include <goopt/io/json_reading.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/dtype.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/ops/shape.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace goopt::io::detail {

inline constexpr std::string_view top_keys[] = {"format", "version", "name", "ops", "outputs"};
inline constexpr std::string_view op_keys[] = {"name",  "op",    "inputs", "attrs",
                                               "shape", "dtype", "layer",  "colocation"};

template <std::size_t N> bool is_one_of(std::string_view k, const std::string_view (&keys)[N]) {
    for (auto x : keys)
        if (x == k) return true;
    return false;
}
template <std::size_t N> std::string list_of(const std::string_view (&keys)[N]) {
    return join(std::vector<std::string_view>(std::begin(keys), std::end(keys)));
}

/// Dependencies between the ops of a file, as a graph::ComputationGraph, so that the reader orders
/// them and finds cycles with the library's own algorithms.
struct file_dependencies {
    std::vector<std::vector<std::size_t>> preds, succs;
    std::size_t num_ops() const { return preds.size(); }
    const std::vector<std::size_t>& predecessors(std::size_t v) const { return preds[v]; }
    const std::vector<std::size_t>& successors(std::size_t v) const { return succs[v]; }
    std::uint64_t op_label(std::size_t) const { return 0; }
};

/// Reads one graph document. Holds the source name and pointer prefix so every check can say where.
template <class Json> class graph_reader {
public:
    graph_reader(const Json& root, std::string_view source, std::string_view prefix)
        : root_(root), source_(source), prefix_(prefix) {}

    graph::computation_graph read();

private:
    /// A tensor reference as written, and once resolved the producing op (file index) and output.
    struct reference {
        std::string text;
        std::string place;   ///< JSON pointer of the reference string
        std::size_t op = 0;  ///< index of the producing op in the file
        std::uint32_t output = 0;
    };
    /// One op of the file, parsed but not yet added (the file may list it before its inputs).
    struct entry {
        std::string place;  ///< JSON pointer of the op object
        std::string name;   ///< empty: the graph names it
        ops::op_kind kind{};
        ops::attribute_map attrs;
        std::vector<reference> inputs;
        std::optional<ops::shape> expected_shape;  ///< "shape" assertion on non-source ops
        std::optional<ops::dtype> expected_dtype;
        std::string shape_place, dtype_place;
        std::int32_t layer = -1;
        std::int32_t colocation = -1;
        graph::op_id id = graph::no_op;  ///< once added
    };

    /// `<source>: <place>: <what>[: expected <expected>]`, on one line whatever the file's names hold.
    [[noreturn]] void fail(const std::string& place, const std::string& what, std::string_view expected = {}) const {
        fail_at(source_, place, what, expected);
    }
    std::string at(std::string_view key) const { return prefix_ + "/" + pointer_token(key); }
    static std::string at(const std::string& place, std::string_view key) { return place + "/" + pointer_token(key); }
    static std::string at(const std::string& place, std::size_t i) { return place + "/" + std::to_string(i); }

    std::int64_t integer(const Json& v, const std::string& place) const {
        if (v.is_number_unsigned() &&
            v.template get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            fail(place, concat("the integer ", v.dump(), " is out of range"), "at most 2^63-1");
        if (!v.is_number_integer()) fail(place, concat("got ", describe(v)), "an integer");
        return v.template get<std::int64_t>();
    }
    double real(const Json& v, const std::string& place) const {
        if (v.is_number()) return v.template get<double>();
        if (v.is_string()) {  // JSON has no spelling for these; the writer uses strings
            const auto& s = v.template get_ref<const typename Json::string_t&>();
            if (s == "inf") return std::numeric_limits<double>::infinity();
            if (s == "-inf") return -std::numeric_limits<double>::infinity();
            if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        }
        fail(place, concat("got ", describe(v)), "a real number (or \"inf\", \"-inf\", \"nan\")");
    }
    std::vector<std::int64_t> integers(const Json& v, const std::string& place) const {
        if (!v.is_array()) fail(place, concat("got ", describe(v)), "a list of integers");
        std::vector<std::int64_t> out;
        out.reserve(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) out.push_back(integer(v[i], at(place, i)));
        return out;
    }
    const std::string& string_value(const Json& v, const std::string& place, std::string_view what) const {
        if (!v.is_string()) fail(place, concat("got ", describe(v)), what);
        return v.template get_ref<const typename Json::string_t&>();
    }
    ops::dtype dtype_value(const Json& v, const std::string& place) const {
        const std::string& s = string_value(v, place, "a dtype name");
        if (auto t = ops::parse_dtype(s)) return *t;
        fail(place, concat("unknown dtype ", quote(s)), concat("one of ", dtype_list()));
    }
    /// A shape: every dimension >= 1 and at most ops::max_rank of them.
    ops::shape shape_value(const Json& v, const std::string& place) const {
        const auto d = integers(v, place);
        if (d.size() > ops::max_rank)
            fail(place, concat("shape has rank ", d.size()), concat("at most ", ops::max_rank));
        for (std::size_t i = 0; i < d.size(); ++i)
            if (d[i] < 1) fail(at(place, i), concat("dimension ", d[i]), ">= 1");
        return ops::shape(std::span<const std::int64_t>(d));
    }

    ops::attr_value attribute(const Json& v, const ops::attr_spec& spec, const std::string& place) const;
    entry parse_op(const Json& o, const std::string& place) const;
    reference resolve(std::string text, std::string place) const;
    graph::tensor_id tensor_of(const graph::computation_graph& g, const reference& r) const;
    std::vector<std::size_t> order() const;

    const Json& root_;
    std::string_view source_;
    std::string prefix_;
    std::vector<entry> entries_;
    std::unordered_map<std::string, std::size_t> by_name_;
};

template <class Json>
ops::attr_value graph_reader<Json>::attribute(const Json& v, const ops::attr_spec& spec,
                                              const std::string& place) const {
    // The enumerated attributes are written by name; numbers are accepted as the enum values.
    switch (spec.id) {
        case ops::attr_id::padding:
            if (v.is_string()) {
                const std::string& s = v.template get_ref<const typename Json::string_t&>();
                for (auto p : {ops::padding_mode::same, ops::padding_mode::valid})
                    if (ops::name(p) == s) return static_cast<std::int64_t>(p);
                fail(place, concat("unknown padding ", quote(s)), "\"same\" or \"valid\" (or 0, 1)");
            } else {
                const auto p = integer(v, place);
                if (p != 0 && p != 1) fail(place, concat("padding ", p), "\"same\" or \"valid\" (or 0, 1)");
                return p;
            }
        case ops::attr_id::activation:
            if (v.is_string()) {
                const std::string& s = v.template get_ref<const typename Json::string_t&>();
                for (std::int64_t a = 0; a < ops::num_activations; ++a)
                    if (ops::name(static_cast<ops::activation>(a)) == s) return a;
                fail(place, concat("unknown activation ", quote(s)),
                     "\"none\", \"relu\", \"sigmoid\", \"tanh\" or \"gelu\" (or 0-4)");
            } else {
                const auto a = integer(v, place);
                if (a < 0 || a >= ops::num_activations)
                    fail(place, concat("activation ", a),
                         "\"none\", \"relu\", \"sigmoid\", \"tanh\" or \"gelu\" (or 0-4)");
                return a;
            }
        case ops::attr_id::dtype:
            return static_cast<std::int64_t>(dtype_value(v, place));
        default:
            break;
    }
    switch (spec.type) {
        case ops::attr_type::integer:
            return integer(v, place);
        case ops::attr_type::real: {
            const double r = real(v, place);
            if (auto p = graph::real_attribute_problem(spec.id, r); !p.empty()) fail(place, p);
            return r;
        }
        case ops::attr_type::ints:
            return integers(v, place);
    }
    GOOPT_ASSERT(false);  // every attr_type is handled above
    fail(place, "unsupported attribute type");
}

template <class Json>
typename graph_reader<Json>::entry graph_reader<Json>::parse_op(const Json& o, const std::string& place) const {
    if (!o.is_object()) fail(place, concat("got ", describe(o)), "an op object");
    entry e;
    e.place = place;
    for (const auto& [key, value] : o.items())
        if (!is_one_of(key, op_keys))
            fail(at(place, key), concat("unknown key ", quote(key), " in an op"), concat("one of ", list_of(op_keys)));

    if (auto it = o.find("name"); it != o.end()) {
        e.name = string_value(*it, at(place, "name"), "a string");
        if (e.name.empty()) fail(at(place, "name"), "empty op name; leave \"name\" out to let the graph name the op");
    }
    // Op-level messages carry the name too: a person looks for the op, not for its index.
    const std::string who = e.name.empty() ? "" : concat("op ", quote(e.name), ": ");

    const auto kind_it = o.find("op");
    if (kind_it == o.end()) fail(place, concat(who, "missing \"op\""), "the op kind, such as \"conv2d\"");
    const std::string& kind_name = string_value(*kind_it, at(place, "op"), "an op kind name");
    const auto kind = ops::parse_op_kind(kind_name);
    if (!kind) fail(at(place, "op"), concat(who, "unknown op kind ", quote(kind_name)));
    e.kind = *kind;
    const ops::op_spec& spec = ops::spec(e.kind);
    const bool is_source = spec.has(ops::source);

    if (auto it = o.find("attrs"); it != o.end()) {
        const std::string attrs_place = at(place, "attrs");
        if (!it->is_object()) fail(attrs_place, concat(who, "got ", describe(*it)), "an object of attributes");
        for (const auto& [key, value] : it->items()) {
            const std::string attr_place = at(attrs_place, key);
            const auto id = ops::parse_attr_id(key);
            const ops::attr_spec* as = nullptr;
            if (id)
                for (const auto& a : spec.attrs)
                    if (a.id == *id) as = &a;
            if (!as) {
                std::vector<std::string_view> takes;
                for (const auto& a : spec.attrs) takes.push_back(ops::name(a.id));
                fail(attr_place, concat(who, "unknown attribute ", quote(key), " for ", spec.name,
                                        takes.empty() ? " (it takes none)" : concat(" (it takes ", join(takes), ")")));
            }
            e.attrs.set(*id, attribute(value, *as, attr_place));
        }
    }

    // "shape"/"dtype": the attributes of a source op, an assertion about output 0 of any other op.
    if (auto it = o.find("shape"); it != o.end()) {
        e.shape_place = at(place, "shape");
        ops::shape s = shape_value(*it, e.shape_place);
        if (is_source) {
            if (e.attrs.has(ops::attr_id::shape))
                fail(e.shape_place, concat(who, "shape given both here and in \"attrs\""));
            e.attrs.set(ops::attr_id::shape, std::vector<std::int64_t>(s.begin(), s.end()));
        } else {
            e.expected_shape = s;
        }
    }
    if (auto it = o.find("dtype"); it != o.end()) {
        e.dtype_place = at(place, "dtype");
        const ops::dtype t = dtype_value(*it, e.dtype_place);
        if (is_source) {
            if (e.attrs.has(ops::attr_id::dtype))
                fail(e.dtype_place, concat(who, "dtype given both here and in \"attrs\""));
            e.attrs.set(ops::attr_id::dtype, static_cast<std::int64_t>(t));
        } else {
            e.expected_dtype = t;
        }
    }
    for (const char* key : {"layer", "colocation"})
        if (auto it = o.find(key); it != o.end()) {
            const auto l = integer(*it, at(place, key));
            if (l < std::numeric_limits<std::int32_t>::min() || l > std::numeric_limits<std::int32_t>::max())
                fail(at(place, key), concat(who, key, " ", l, " is out of the 32-bit range"), "a 32-bit integer");
            (std::string_view(key) == "layer" ? e.layer : e.colocation) = static_cast<std::int32_t>(l);
        }
    if (auto it = o.find("inputs"); it != o.end()) {
        const std::string inputs_place = at(place, "inputs");
        if (!it->is_array()) fail(inputs_place, concat(who, "got ", describe(*it)), "a list of tensor references");
        for (std::size_t i = 0; i < it->size(); ++i) {
            reference r;
            r.place = at(inputs_place, i);
            r.text = string_value((*it)[i], r.place, "a tensor reference (\"op\" or \"op:k\")");
            e.inputs.push_back(std::move(r));
        }
    }
    return e;
}

/// Resolves "name" (output 0) or "name:k" against the names of the file. An exact name wins, so an
/// op may have a colon in its name as long as it is not ambiguous (checked when the names are read).
template <class Json>
typename graph_reader<Json>::reference graph_reader<Json>::resolve(std::string text, std::string place) const {
    reference r;
    r.text = std::move(text);
    r.place = std::move(place);
    if (auto it = by_name_.find(r.text); it != by_name_.end()) {
        r.op = it->second;
        return r;
    }
    if (auto s = split_reference(r.text)) {
        if (auto it = by_name_.find(std::string(s->first)); it != by_name_.end()) {
            r.op = it->second;
            r.output = s->second;
            return r;
        }
    }
    fail(r.place, concat("reference ", quote(r.text), " names no op in the file"), "\"op\" or \"op:k\" for a named op");
}

/// The tensor a resolved reference denotes, once its producer is in the graph.
template <class Json>
graph::tensor_id graph_reader<Json>::tensor_of(const graph::computation_graph& g, const reference& r) const {
    const graph::op& producer = g.get_op(entries_[r.op].id);
    const std::size_t n = producer.outputs.size();
    if (r.output >= n)
        fail(r.place, concat("reference ", quote(r.text), ": op ", quote(producer.name), " has ", n,
                             n == 1 ? " output" : " outputs", ", so there is no output ", r.output));
    return producer.outputs[r.output];
}

/// The file's ops in dependency order, smallest file index first among the ready ones, so that a file
/// already in dependency order is added in file order (and a written graph reads back with the same
/// op ids); a cycle is reported with the names of the ops on it.
template <class Json> std::vector<std::size_t> graph_reader<Json>::order() const {
    file_dependencies deps;
    deps.preds.resize(entries_.size());
    deps.succs.resize(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i)
        for (const auto& r : entries_[i].inputs) {
            deps.preds[i].push_back(r.op);
            deps.succs[r.op].push_back(i);
        }
    if (auto order = graph::try_topological_order(deps)) return std::move(*order);
    const auto cycle = graph::find_cycle(deps);
    std::string names;
    for (std::size_t v : cycle) names += quote(entries_[v].name) + " -> ";
    names += quote(entries_[cycle.front()].name);
    fail(concat(prefix_, "/ops"), concat("the ops form a cycle: ", names, " (each consumes the one before it)"),
         "an acyclic graph");
}

template <class Json> graph::computation_graph graph_reader<Json>::read() {
    if (!root_.is_object()) fail(prefix_, concat("got ", describe(root_)), "a JSON object (a goopt graph)");
    const auto format_it = root_.find("format");
    if (format_it == root_.end())
        fail(prefix_, concat("missing \"format\": \"", graph_format_name, "\""), "a goopt graph file");
    if (!format_it->is_string() || format_it->template get_ref<const typename Json::string_t&>() != graph_format_name)
        fail(
            at("format"),
            concat("got ", format_it->is_string() ? quote(format_it->template get_ref<const typename Json::string_t&>())
                                                  : describe(*format_it)),
            concat("\"", graph_format_name, "\""));
    const auto version_it = root_.find("version");
    if (version_it == root_.end()) fail(prefix_, "missing \"version\"", concat("\"version\": ", graph_format_version));
    if (const auto v = integer(*version_it, at("version")); v != graph_format_version)
        fail(at("version"), concat("unsupported version ", v),
             concat("version ", graph_format_version, ", which this reader supports"));
    for (const auto& [key, value] : root_.items())
        if (!is_one_of(key, top_keys))
            fail(at(key), concat("unknown key ", quote(key)), concat("one of ", list_of(top_keys)));

    graph::computation_graph g;
    if (auto it = root_.find("name"); it != root_.end()) g.set_name(string_value(*it, at("name"), "a string"));

    const auto ops_it = root_.find("ops");
    if (ops_it == root_.end()) fail(prefix_, "missing \"ops\"", "the list of ops ([] for an empty graph)");
    const std::string ops_place = at("ops");
    if (!ops_it->is_array()) fail(ops_place, concat("got ", describe(*ops_it)), "a list of ops");

    entries_.reserve(ops_it->size());
    for (std::size_t i = 0; i < ops_it->size(); ++i) {
        entries_.push_back(parse_op((*ops_it)[i], at(ops_place, i)));
        const entry& e = entries_.back();
        if (e.name.empty()) continue;
        if (auto [it, fresh] = by_name_.emplace(e.name, i); !fresh)
            fail(at(e.place, "name"),
                 concat("duplicate op name ", quote(e.name), " (first used at ", entries_[it->second].place, ")"),
                 "unique op names");
    }
    for (const entry& e : entries_)
        if (auto other = ambiguous_with(e.name, [&](std::string_view n) { return by_name_.count(std::string(n)) > 0; }))
            fail(at(e.place, "name"), concat("op name ", quote(e.name), " is ambiguous: it also reads as output ",
                                             e.name.substr(other->size() + 1), " of op ", quote(*other)));
    for (entry& e : entries_)
        for (reference& r : e.inputs) r = resolve(std::move(r.text), std::move(r.place));

    for (std::size_t i : order()) {
        entry& e = entries_[i];
        std::vector<graph::tensor_id> inputs;
        for (const reference& r : e.inputs) inputs.push_back(tensor_of(g, r));
        const auto id = static_cast<graph::op_id>(g.num_ops());
        try {
            g.add(e.kind, inputs, std::move(e.attrs), e.name);
        } catch (const error& x) {
            fail(e.place, x.what());
        }
        e.id = id;
        const auto& added = g.get_op(id);
        if (e.name.empty() && by_name_.count(added.name))
            fail(e.place,
                 concat("this unnamed op gets the name ", quote(added.name), ", which another op in the file has"),
                 "a name for this op");
        g.set_layer(id, e.layer);
        g.set_colocation(id, e.colocation);
        const ops::tensor_type& out = g.type_of(added.outputs[0]);
        if (e.expected_shape && *e.expected_shape != out.dims)
            fail(e.shape_place, concat(g.describe(id), " has shape ", out.dims.to_string(), ", the file says ",
                                       e.expected_shape->to_string()));
        if (e.expected_dtype && *e.expected_dtype != out.type)
            fail(e.dtype_place, concat(g.describe(id), " has dtype ", ops::name(out.type), ", the file says ",
                                       ops::name(*e.expected_dtype)));
    }

    if (auto it = root_.find("outputs"); it != root_.end()) {
        const std::string outputs_place = at("outputs");
        if (!it->is_array()) fail(outputs_place, concat("got ", describe(*it)), "a list of tensor references");
        for (std::size_t i = 0; i < it->size(); ++i) {
            std::string place = at(outputs_place, i);
            std::string text = string_value((*it)[i], place, "a tensor reference (\"op\" or \"op:k\")");
            g.mark_output(tensor_of(g, resolve(std::move(text), std::move(place))));
        }
    }
    return g;
}

template <class Json>
graph::computation_graph read_graph_json(const Json& j, std::string_view source, std::string_view prefix) {
    try {
        return graph_reader<Json>(j, source, prefix).read();
    } catch (const nlohmann::json::exception& e) {
        // Every access above is checked first; this only keeps the promise that no nlohmann
        // exception leaves the reader if one of those checks is ever missed.
        throw error(source, without_nlohmann_prefix(e.what()));
    }
}

}  // namespace goopt::io::detail
