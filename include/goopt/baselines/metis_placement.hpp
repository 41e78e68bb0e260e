#pragma once
// goopt: optional-edge (needs libmetis: link goopt::metis)
/// @file
/// @brief METIS placement: a k-way partition of the op graph with balanced compute per part and the
/// fewest bytes cut (Karypis and Kumar, SIAM J. Sci. Comput. 1998; METIS 5 METIS_PartGraphKway).

#include <goopt/error.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulator.hpp>

#include <metis.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace goopt::baselines {

/// @brief Places ops by partitioning the graph with METIS into one part per device.
///
/// Vertices are ops, except that each colocation group is contracted into one vertex so that the
/// partition keeps it together; a vertex weighs its compute time (the simulator's time on device 0,
/// so this suits clusters of identical devices); an undirected edge weighs the bytes of the tensors
/// between its ends. Weights are scaled to integers whose sums fit METIS's idx_t. Part p goes to
/// device p. Deterministic for a given seed.
template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::placement metis_placement(const sim::simulator<D, Cost>& s, int seed = 1) {
    const auto& g = s.graph();
    const std::size_t n = g.num_ops(), nd = s.cluster().num_devices();
    if (nd == 1 || n == 0) return sim::placement(n, 0);
    // vertex of each op: colocation groups contracted
    std::vector<std::uint32_t> vertex(n);
    std::unordered_map<std::int32_t, std::uint32_t> group_vertex;
    std::uint32_t nv = 0;
    for (graph::op_id o = 0; o < n; ++o) {
        const auto grp = g.get_op(o).colocation;
        if (grp < 0) vertex[o] = nv++;
        else {
            auto [it, fresh] = group_vertex.try_emplace(grp, nv);
            if (fresh) ++nv;
            vertex[o] = it->second;
        }
    }
    std::vector<double> time(nv, 0.0);
    double total_time = 0;
    for (graph::op_id o = 0; o < n; ++o) {
        time[vertex[o]] += s.op_time(o, 0);
        total_time += s.op_time(o, 0);
    }
    std::vector<std::tuple<std::uint32_t, std::uint32_t, double>> edges;
    double total_bytes = 0;
    for (graph::tensor_id t = 0; t < g.num_tensors(); ++t) {
        const auto& x = g.get_tensor(t);
        const auto a = vertex[x.producer];
        const double b = static_cast<double>(x.type.bytes());
        std::uint32_t last = ~0u;
        for (const graph::use& u : x.uses) {
            const auto v = vertex[u.op];
            if (v == a || v == last) continue;  // one transfer per tensor and destination
            last = v;
            edges.emplace_back(a, v, b);
            edges.emplace_back(v, a, b);
            total_bytes += 2 * b;
        }
    }
    std::sort(edges.begin(), edges.end());
    const double max_sum = 1e9;  // sums of weights must stay below 2^31
    const double time_scale = total_time > 0 ? max_sum / total_time : 0;
    const double byte_scale = total_bytes > 0 ? max_sum / total_bytes : 0;
    std::vector<idx_t> xadj(nv + 1, 0), adjncy, adjwgt, vwgt(nv), part(nv, 0);
    for (std::uint32_t v = 0; v < nv; ++v) vwgt[v] = static_cast<idx_t>(std::max(1.0, time[v] * time_scale));
    for (std::size_t i = 0; i < edges.size();) {
        const auto [a, v, b0] = edges[i];
        double b = 0;
        for (; i < edges.size() && std::get<0>(edges[i]) == a && std::get<1>(edges[i]) == v; ++i)
            b += std::get<2>(edges[i]);
        adjncy.push_back(static_cast<idx_t>(v));
        adjwgt.push_back(static_cast<idx_t>(std::max(1.0, b * byte_scale)));
        ++xadj[a + 1];
        (void)b0;
    }
    for (std::uint32_t v = 0; v < nv; ++v) xadj[v + 1] += xadj[v];
    idx_t nvtxs = static_cast<idx_t>(nv), ncon = 1, nparts = static_cast<idx_t>(nd), objval = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = seed;
    options[METIS_OPTION_NUMBERING] = 0;
    if (adjncy.empty()) {  // METIS wants at least one edge; spread isolated vertices round-robin by weight
        for (std::uint32_t v = 0; v < nv; ++v) part[v] = static_cast<idx_t>(v % nd);
    } else {
        const int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                                           adjwgt.data(), &nparts, nullptr, nullptr, options, &objval, part.data());
        if (rc != METIS_OK) throw error("metis_placement", concat("METIS_PartGraphKway failed with code ", rc));
    }
    sim::placement p(n);
    for (graph::op_id o = 0; o < n; ++o) p[o] = static_cast<sim::device_id>(part[vertex[o]]);
    return p;
}

}  // namespace goopt::baselines
