// One JSON record per configuration (--json).
#include "bench_program.hpp"

#include "halox_programs/memory.hpp"
#include "halox/device.hpp"
#include "halox/programs/decomposition/hw.hpp"
#include "halox/exchange.hpp"

namespace halox::bench {

namespace {

// Per round: the median exchange, its floor, its ratio to the baseline of the
// same round, and the probe around its turn; then the cell's verdict.
nlohmann::json to_json(const probe_spread& s) {
  return {{"round_trip_factor", s.round_trip_factor},
          {"round_trip_low_ns", s.round_trip_low_ns},
          {"round_trip_high_ns", s.round_trip_high_ns},
          {"round_trip_answered_high_ns", s.round_trip_answered_high_ns},
          {"copy_factor", s.copy_factor},
          {"worst_run_wait", s.worst_run_wait},
          {"worst_steal", s.worst_steal},
          {"worst_run_wait_cpu", s.worst_run_wait_cpu >= 0 ? nlohmann::json(s.worst_run_wait_cpu)
                                                          : nlohmann::json(nullptr)},
          {"highest_load", s.highest_load}};
}

// The cell's verdict, and what the launch's verdicts come to (the same in
// every record of the launch).
void add_verdict(nlohmann::json& j, const result& r, const cell_verdict& v, const launch_stability& judged) {
  std::vector<std::string> causes;
  for (cause why : v.stability.causes) causes.push_back(to_string(why));
  const auto leading = leading_cause(v.stability, judged.ranked);
  j["stable"] = v.stability.stable;
  j["stability"] = {{"rounds_disagree", v.stability.rounds_disagree},
                    {"reasons", v.stability.reasons},
                    {"causes", causes},
                    {"leading_cause", leading ? nlohmann::json(to_string(*leading)) : nlohmann::json(nullptr)},
                    {"settled", r.settled}};
  j["launch_stability"] = {{"summary", judged.summary}, {"brief", judged.brief}};
}

void add_rounds(nlohmann::json& j, const result& r, const cell_verdict& v, const launch_probes& launch,
                const launch_stability& judged) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& t : r.round_probes) {
    // Marks of the turn alone: disturbed while it ran, or the probe moved a mode across it.
    const probe_spread s = spread_of({t});
    probes.push_back({{"before", to_json(t.before)},
                      {"after", to_json(t.after)},
                      {"disturbed", s.disturbed()},
                      {"moved", s.moved_mode()}});
  }
  j["machine_probe"] = probes;
  // An automatic choice's trials ran right after the first probe of its first
  // turn, its first timed exchanges right before the second.
  if (r.cfg.automatic() && !r.round_probes.empty())
    j["auto_trials_probe"] = {{"before_trials", to_json(r.round_probes.front().before)},
                              {"after_first_timed", to_json(r.round_probes.front().after)},
                              {"rechecked", r.rechecked}};
  j["round_medians_s"] = r.round_medians;
  j["round_floors_s"] = r.round_floors;
  j["round_line_floors_s"] = r.round_line_floors;
  j["round_crossings_s"] = r.round_crossings;
  const summary spread = summarize(r.round_medians);
  j["round_spread"] = {{"min_s", spread.min}, {"max_s", spread.max},
                       {"relative", spread.median > 0 ? (spread.max - spread.min) / spread.median : 0.0}};
  if (v.ratios)
    j["ratio_to_baseline"] = {{"per_round", v.ratios->per_round}, {"median", v.ratios->median},
                              {"min", v.ratios->min}, {"max", v.ratios->max}};
  else
    j["ratio_to_baseline"] = nullptr;
  add_verdict(j, r, v, judged);
  j["launch_probe"] = {{"pairs", launch.pairs},
                       {"spread", to_json(judged.probes)},
                       {"start", to_json(launch.start)},
                       {"end", to_json(launch.end)},
                       {"samples", launch.samples},
                       {"cost_s", launch.cost_s},
                       {"wall_s", launch.wall_s}};
}

// What was measured and how: the record's "config".
nlohmann::json config_json(const result& r, const bench_options& o) {
  return {{"transport", r.cfg.transport_label()},
          {"transport_path", r.path},
          {"chosen", r.chosen},
          // What the automatic choice decided, as the wisdom file stores it.
          {"choice", !r.chosen.empty() && r.decided ? nlohmann::json::parse(choice_json(*r.decided))
                                                    : nlohmann::json(nullptr)},
          {"algorithm", r.cfg.algorithm_label()},
          {"grouping", r.cfg.grouping.label},
          {"fields_per_message", r.fields_per_message},
          {"fields_per_block", r.fields_per_block},
          {"type", to_string(r.cfg.type)},
          {"halo", r.cfg.halo_label},
          {"halo_lo", r.cfg.halo.lo},
          {"halo_hi", r.cfg.halo.hi},
          {"nfields", r.cfg.nfields},
          {"domain", o.global_domain.empty() ? o.domain : std::vector<int>{}},
          {"global_domain", o.global_domain},
          {"timing", o.timing},
          {"warmup", o.warmup},
          {"rounds", static_cast<int>(r.round_medians.size())},
          {"rounds_asked", o.rounds_auto ? nlohmann::json("auto") : nlohmann::json(o.rounds)},
          {"baseline", o.baseline},
          {"rechecked", r.rechecked},
          {"rechosen", r.rechosen},
          {"check", !o.no_check},
          {"memory", r.memory},
          {"memory_fallback", o.shared_memory_fallback},
          {"field_pages", o.field_pages},
          {"huge_pages", transparent_huge_pages()},
          {"transport_settings", r.settings},
          {"ranks_per_node", o.decomp.ranks_per_node}};
}

}  // namespace

nlohmann::json to_json_record(const result& r, const summary& s, const cell_verdict& verdict,
                              const bench_options& o, const decomposition& decomp,
                              const nlohmann::json& provenance, const std::string& run_id,
                              const launch_probes& launch, const launch_stability& judged) {
  nlohmann::json j = provenance;
  j["tool"] = program;
  j["run_id"] = run_id;
  j["config"] = config_json(r, o);
  j["decomposition"] = {{"kind", decomp.kind()},
                        {"dims", decomp.dims()},
                        {"periodic", decomp.periodic()},
                        {"order", decomp.order().name()}};
  // The level grids as given, so that halox-topo can lay the run out again.
  if (decomp.kind() == "hw")
    j["decomposition"]["level_grids"] = level_grids_of(o.decomp).options(true);
  j["plan"] = {{"messages", r.messages},
               {"bytes_sent", r.bytes_sent},
               {"bytes_copied", r.bytes_copied},
               {"max_bytes_sent", r.max_bytes_sent}};
  nlohmann::json sent = nlohmann::json::array();
  for (const auto& t : r.sent)
    sent.push_back({{"transport", t.transport},
                    {"bytes_to_same_node", t.bytes_to_same_node},
                    {"bytes_to_other_nodes", t.bytes_to_other_nodes}});
  // Per exchange, summed over ranks: the plan by host name, and what the
  // routing handed each transport by node.
  j["traffic"] = {{"plan_bytes_to_same_host", r.plan_to_same_host},
                  {"plan_bytes_to_other_hosts", r.plan_to_other_hosts},
                  {"sent", sent}};
  double mean_per = r.loop_seconds / static_cast<double>(r.exchanges);
  j["exchanges"] = r.exchanges;
  j["time_per_exchange_s"] = s;
  j["loop_mean_s"] = mean_per;
  j["seconds_per_10000"] = mean_per * 1e4;
  j["memcpy_s"] = r.memcpy_seconds;
  if (r.computed) j["compute_timestep_s"] = r.compute_seconds / static_cast<double>(r.exchanges);
  j["line_bytes"] = {{"copied", r.lines.copy_bytes()},
                     {"read", r.lines.read_bytes},
                     {"written", r.lines.written_bytes}};
  j["line_floor_s"] = r.line_floor_seconds;
  j["efficiency"] = efficiency(r);
  j["memcpy_efficiency"] = memcpy_efficiency(r);
  j["crossing_s"] = r.crossing_seconds;
  j["crossing_efficiency"] = crossing_efficiency(r);
  j["self_copy_reference_s"] = r.reference_seconds;
  j["self_copy_share"] = reference_share(r);
  if (const auto spread = reference_spread(r))
    j["self_copy_reference_ranks"] = {{"fastest_s", spread->fastest_s},
                                      {"median_s", spread->median_s},
                                      {"slowest_s", spread->slowest_s},
                                      {"fastest_rank", spread->fastest_rank},
                                      {"slowest_rank", spread->slowest_rank}};
  else
    j["self_copy_reference_ranks"] = nullptr;
  j["throughput_GBps"] = s.median > 0 ? (r.bytes_sent + r.bytes_copied) / s.median / 1e9 : 0.0;
  j["verification"] = r.verified ? "passed" : "skipped";
  if (r.memory == "device") {
    j["gpu"] = cuda::device_name();
    j["cuda_version"] = cuda::version();
  }
  j["stage_breakdown"] = to_json(r.breakdown);
  j["setup"] = to_json(r.setup);
  add_rounds(j, r, verdict, launch, judged);
  return j;
}

}  // namespace halox::bench
