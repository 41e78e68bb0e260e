#pragma once
/// @file
/// @brief The JSON rule file: substitution rules as their source and target graphs.
///
/// Schema (format "goopt.rules", version 1):
/// @code
/// { "format": "goopt.rules", "version": 1,
///   "rules": [
///     { "text": "concat{axis=1}(matmul(x0,x1),matmul(x0,x2)) => matmul(x0,concat{axis=1}(x1,x2))",
///       "variables": [ {"name": "x0", "shape": [4,4]}, ... ],   // the shapes it was found at
///       "source": { "ops": [ {"op": "matmul", "attrs": {"activation": 0}, "inputs": ["x0", "x1"]}, ... ],
///                   "outputs": ["%2"] },
///       "target": { ... } } ] }
/// @endcode
/// An input or output reference is a variable name, `%i` (output 0 of op i of the same side, ops
/// in topological order) or `%i#k` (output k). Attributes are written in full, integers (padding
/// 0 = same, 1 = valid; activation 0 = none, 1 = relu), reals or integer lists. `text` is the rule's
/// one-line form (subst::to_string); on reading it must match the graphs. Output i of the target
/// equals output i of the source.

#include <goopt/error.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/json_reading.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/rule.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace goopt::io {

inline constexpr std::string_view rules_format_name = "goopt.rules";
inline constexpr std::int64_t rules_format_version = 1;

/// @brief The rule file's JSON for `rules`, in their order.
inline nlohmann::ordered_json rules_to_json(std::span<const subst::rule> rules);

/// @brief Rules from the rule file's JSON. @param source_name names the file in error messages.
/// @throws goopt::error naming the file, the rule index and the field for anything malformed:
/// wrong format or version, unknown op or attribute, a reference to a later op or a missing
/// variable, a side that fails shape inference, a `text` that does not match the graphs.
inline std::vector<subst::rule> rules_from_json(const nlohmann::json& j, std::string_view source_name);

/// @brief Rules from the rule file's text; invalid JSON is reported with its byte offset.
/// @throws goopt::error as rules_from_json.
inline std::vector<subst::rule> rules_from_json_string(std::string_view text,
                                                       std::string_view source_name = "<string>");

/// @brief Writes the rule file atomically (io::atomic_write), one rule a line.
inline void write_rules_file(const std::filesystem::path& path, std::span<const subst::rule> rules);

/// @brief Reads a rule file. @throws goopt::error for an unreadable or malformed file.
inline std::vector<subst::rule> read_rules_file(const std::filesystem::path& path);

/// @brief Where the rule library is: the environment variable GOOPT_RULES_FILE when it is set,
/// else the file that the build or the installed CMake package names (the macro GOOPT_RULES_FILE,
/// which goopt::goopt defines when share/goopt/taso_rules_k3.json was built or installed with it).
/// @throws goopt::error saying how to name one when neither is there.
inline std::filesystem::path default_rules_file();

/// @brief read_rules_file(default_rules_file()).
inline std::vector<subst::rule> read_default_rules() { return read_rules_file(default_rules_file()); }

// ---- implementation ----

namespace detail {

inline std::string value_text(const subst::rule& r, subst::value_ref v) {
    if (v.is_variable()) return r.variables.at(v.index).name;
    std::string s(1, '%');  // appended piecewise: GCC 12 warns (-Wrestrict) on the one-expression form
    s += std::to_string(v.op);
    if (v.index) {
        s += '#';
        s += std::to_string(v.index);
    }
    return s;
}

inline nlohmann::ordered_json side_to_json(const subst::rule& r, const subst::rule_graph& g) {
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (const auto& o : g.ops) {
        nlohmann::ordered_json attrs = nlohmann::ordered_json::object();
        for (const auto& [id, v] : o.attrs)
            std::visit([&, id = id](const auto& x) { attrs[std::string(ops::name(id))] = x; }, v);
        nlohmann::ordered_json in = nlohmann::ordered_json::array();
        for (auto v : o.inputs) in.push_back(value_text(r, v));
        ops.push_back({{"op", std::string(ops::name(o.kind))}, {"attrs", std::move(attrs)}, {"inputs", std::move(in)}});
    }
    nlohmann::ordered_json outs = nlohmann::ordered_json::array();
    for (auto v : g.outputs) outs.push_back(value_text(r, v));
    return {{"ops", std::move(ops)}, {"outputs", std::move(outs)}};
}

class rule_reader {
public:
    explicit rule_reader(std::string_view source) : source_(source) {}

    /// Control characters (from op or variable names in the file) are escaped: one line, always.
    [[noreturn]] void fail(const std::string& place, const std::string& what, std::string_view expected = {}) const {
        fail_at(source_, place, what, expected);
    }

    const nlohmann::json& field(const nlohmann::json& obj, const char* key, const std::string& place) const {
        if (!obj.is_object()) fail(place, concat("got ", describe(obj)), "an object");
        auto it = obj.find(key);
        if (it == obj.end()) fail(place, concat("field '", key, "' is missing"));
        return *it;
    }

    subst::value_ref reference(const nlohmann::json& v, const subst::rule& r, std::size_t num_ops,
                               const std::string& place) const {
        if (!v.is_string()) fail(place, concat("got ", describe(v)), "a string: a variable name, %i or %i#k");
        const std::string s = v.get<std::string>();
        if (!s.empty() && s[0] == '%') {
            std::size_t op = 0, out = 0;
            const auto hash = s.find('#');
            try {
                std::size_t used = 0;
                op = std::stoul(s.substr(1, hash == std::string::npos ? std::string::npos : hash - 1), &used);
                if (used + 1 != (hash == std::string::npos ? s.size() : hash)) throw std::invalid_argument(s);
                if (hash != std::string::npos) {
                    out = std::stoul(s.substr(hash + 1), &used);
                    if (used + hash + 1 != s.size()) throw std::invalid_argument(s);
                }
            } catch (const std::exception&) {
                fail(place, concat("reference '", s, "' is malformed"), "%i or %i#k");
            }
            if (op >= num_ops)
                fail(place, concat("reference '", s, "' names op ", op), concat("an earlier op (< ", num_ops, ")"));
            // value_ref holds 16-bit indices (0xffff marks a variable): larger ones would wrap silently
            if (op >= subst::variable_op || out >= subst::variable_op)
                fail(place, concat("reference '", s, "' is out of range"),
                     concat("op and output indices below ", subst::variable_op));
            return {static_cast<std::uint16_t>(op), static_cast<std::uint16_t>(out)};
        }
        for (std::size_t i = 0; i < r.variables.size(); ++i)
            if (r.variables[i].name == s) return {subst::variable_op, static_cast<std::uint16_t>(i)};
        fail(place, concat("unknown variable '", s, "'"));
    }

    subst::rule_graph side(const nlohmann::json& j, const subst::rule& r, const std::string& place) const {
        subst::rule_graph g;
        const auto& ops_j = field(j, "ops", place);
        if (!ops_j.is_array()) fail(concat(place, ".ops"), concat("got ", describe(ops_j)), "an array");
        for (std::size_t i = 0; i < ops_j.size(); ++i) {
            const std::string p = concat(place, ".ops[", i, "]");
            const auto& oj = ops_j[i];
            const auto& name = field(oj, "op", p);
            if (!name.is_string()) fail(concat(p, ".op"), concat("got ", describe(name)), "a string");
            const auto kind = ops::parse_op_kind(name.get<std::string>());
            if (!kind) fail(concat(p, ".op"), concat("unknown op '", name.get<std::string>(), "'"));
            subst::rule_op o{*kind, {}, {}, 1};
            const auto& attrs = field(oj, "attrs", p);
            if (!attrs.is_object()) fail(concat(p, ".attrs"), concat("got ", describe(attrs)), "an object");
            for (const auto& [key, v] : attrs.items()) {
                const auto id = ops::parse_attr_id(key);
                if (!id || !ops::spec(*kind).takes(*id))
                    fail(concat(p, ".attrs"), concat("op ", ops::name(*kind), " takes no attribute '", key, "'"));
                if (v.is_number_integer()) o.attrs.set(*id, v.get<std::int64_t>());
                else if (v.is_number()) {
                    if (auto bad = graph::real_attribute_problem(*id, v.get<double>()); !bad.empty())
                        fail(concat(p, ".attrs.", key), bad);
                    o.attrs.set(*id, v.get<double>());
                } else if (v.is_array() &&
                           std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number_integer(); }))
                    o.attrs.set(*id, v.get<std::vector<std::int64_t>>());
                else
                    fail(concat(p, ".attrs.", key), concat("got ", describe(v)),
                         "an integer, a real or a list of integers");
            }
            const auto& in = field(oj, "inputs", p);
            if (!in.is_array()) fail(concat(p, ".inputs"), concat("got ", describe(in)), "an array");
            for (std::size_t k = 0; k < in.size(); ++k)
                o.inputs.push_back(reference(in[k], r, i, concat(p, ".inputs[", k, "]")));
            g.ops.push_back(std::move(o));
        }
        const auto& outs = field(j, "outputs", place);
        if (!outs.is_array() || outs.empty())
            fail(concat(place, ".outputs"), concat("got ", outs.dump()), "a non-empty array");
        for (std::size_t k = 0; k < outs.size(); ++k)
            g.outputs.push_back(reference(outs[k], r, g.ops.size(), concat(place, ".outputs[", k, "]")));
        return g;
    }

    std::vector<subst::rule> read(const nlohmann::json& j) const {
        const auto& format = field(j, "format", "top level");
        if (format != std::string(rules_format_name))
            fail("format", concat("is ", format.dump()), concat("\"", rules_format_name, "\""));
        const auto& version = field(j, "version", "top level");
        if (version != rules_format_version)
            fail("version", concat("is ", version.dump()), concat(rules_format_version));
        const auto& rs = field(j, "rules", "top level");
        if (!rs.is_array()) fail("rules", concat("got ", describe(rs)), "an array");
        std::vector<subst::rule> out;
        for (std::size_t i = 0; i < rs.size(); ++i) {
            const std::string p = concat("rules[", i, "]");
            subst::rule r;
            const auto& vars = field(rs[i], "variables", p);
            if (!vars.is_array()) fail(concat(p, ".variables"), concat("got ", describe(vars)), "an array");
            if (vars.size() >= subst::variable_op)
                fail(concat(p, ".variables"), concat("has ", vars.size(), " variables"),
                     concat("fewer than ", subst::variable_op));
            for (std::size_t k = 0; k < vars.size(); ++k) {
                const std::string vp = concat(p, ".variables[", k, "]");
                const auto& n = field(vars[k], "name", vp);
                const auto& s = field(vars[k], "shape", vp);
                if (!n.is_string() || n.get<std::string>().empty() || n.get<std::string>()[0] == '%')
                    fail(concat(vp, ".name"), concat("got ", n.dump()), "a name not starting with %");
                if (!s.is_array() || s.size() > ops::max_rank || !std::all_of(s.begin(), s.end(), [](const auto& x) {
                        return x.is_number_integer() && x.template get<std::int64_t>() >= 1;
                    }))
                    fail(concat(vp, ".shape"), concat("got ", s.dump()),
                         concat("a list of at most ", ops::max_rank, " dimensions >= 1"));
                const auto dims = s.get<std::vector<std::int64_t>>();
                r.variables.push_back({n.get<std::string>(), ops::shape{std::span<const std::int64_t>(dims)}});
            }
            r.source = side(field(rs[i], "source", p), r, p + ".source");
            r.target = side(field(rs[i], "target", p), r, p + ".target");
            if (r.source.outputs.size() != r.target.outputs.size())
                fail(p, concat("source has ", r.source.outputs.size(), " outputs, target ", r.target.outputs.size()),
                     "as many");
            try {
                // shape inference of both sides, and the output counts of multi-output ops
                for (auto* g : {&r.source, &r.target}) {
                    const auto cg = subst::to_graph(r, *g);
                    for (std::size_t k = 0; k < g->ops.size(); ++k)
                        g->ops[k].num_outputs = static_cast<std::uint16_t>(
                            cg.get_op(static_cast<graph::op_id>(r.variables.size() + k)).outputs.size());
                }
                const auto s = subst::to_graph(r, r.source), t = subst::to_graph(r, r.target);
                for (std::size_t k = 0; k < s.outputs().size(); ++k)
                    if (!(s.type_of(s.outputs()[k]) == t.type_of(t.outputs()[k])))
                        fail(p,
                             concat("output ", k, " has type ", ops::to_string(s.type_of(s.outputs()[k])),
                                    " in the source and ", ops::to_string(t.type_of(t.outputs()[k])), " in the target"),
                             "one type on both sides");
            } catch (const goopt::error& e) {
                if (std::string_view(e.what()).starts_with(source_)) throw;
                fail(p, e.what());
            }
            const auto& text = field(rs[i], "text", p);
            if (!text.is_string() || text.get<std::string>() != subst::to_string(r))
                fail(concat(p, ".text"), concat("is ", text.dump()),
                     concat("the graphs' form \"", subst::to_string(r), "\""));
            out.push_back(std::move(r));
        }
        return out;
    }

private:
    std::string source_;
};

}  // namespace detail

inline nlohmann::ordered_json rules_to_json(std::span<const subst::rule> rules) {
    nlohmann::ordered_json rs = nlohmann::ordered_json::array();
    for (const auto& r : rules) {
        nlohmann::ordered_json vars = nlohmann::ordered_json::array();
        for (const auto& v : r.variables)
            vars.push_back({{"name", v.name}, {"shape", std::vector<std::int64_t>(v.dims.begin(), v.dims.end())}});
        rs.push_back({{"text", subst::to_string(r)},
                      {"variables", std::move(vars)},
                      {"source", detail::side_to_json(r, r.source)},
                      {"target", detail::side_to_json(r, r.target)}});
    }
    return {{"format", std::string(rules_format_name)}, {"version", rules_format_version}, {"rules", std::move(rs)}};
}

inline std::vector<subst::rule> rules_from_json(const nlohmann::json& j, std::string_view source_name) {
    return detail::rule_reader(source_name).read(j);
}

inline std::vector<subst::rule> rules_from_json_string(std::string_view text, std::string_view source_name) {
    return rules_from_json(detail::parse_json_text(text, source_name), source_name);
}

inline void write_rules_file(const std::filesystem::path& path, std::span<const subst::rule> rules) {
    // one rule a line: a rule file of tens of thousands of rules stays small and diffs line by line
    const auto j = rules_to_json(rules);
    std::string text =
        "{\"format\": " + j["format"].dump() + ", \"version\": " + j["version"].dump() + ", \"rules\": [";
    for (std::size_t i = 0; i < j["rules"].size(); ++i) {
        text += i ? ",\n  " : "\n  ";
        text += j["rules"][i].dump();
    }
    text += "\n]}\n";
    atomic_write(path, text);
}

inline std::vector<subst::rule> read_rules_file(const std::filesystem::path& path) {
    return rules_from_json_string(detail::read_text_file(path, "rule"), path.string());
}

inline std::filesystem::path default_rules_file() {
    if (const char* env = std::getenv("GOOPT_RULES_FILE"); env != nullptr && *env != '\0') return env;
#if defined(GOOPT_RULES_FILE)
    return GOOPT_RULES_FILE;
#else
    throw error("rule library", "none known to this build",
                "the environment variable GOOPT_RULES_FILE to name a rule file (share/goopt/taso_rules_k3.json of "
                "an installation, or one from generate_rules)");
#endif
}

}  // namespace goopt::io
