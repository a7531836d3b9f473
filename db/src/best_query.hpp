// The one query for the fastest ok result of a (family, device name, problem) over every sweep, shared by
// the read-only client and the store: the caller picks the columns and may join more tables between the
// two parts (?1 family, ?2 device name, ?3 size text, ?4 arguments text).
#pragma once

#include <string>

namespace tiletune::best_query {

// CROSS JOIN fixes the join order: from the names in the query down to the sweeps, never a scan. The partial
// index results_ok_by_time gives each sweep's fastest ok result as its first entry; `r` is that result.
inline constexpr const char* from =
    "FROM families f CROSS JOIN devices d CROSS JOIN problems p "
    "CROSS JOIN sweeps s ON s.family_id = f.id AND s.device_id = d.id AND s.problem_id = p.id "
    "CROSS JOIN results r ON r.id = (SELECT r2.id FROM results r2 WHERE r2.sweep_id = s.id "
    "AND r2.outcome = 'ok' AND r2.median_ms IS NOT NULL ORDER BY r2.median_ms, r2.id LIMIT 1) ";

// The matching sweeps' best results, the fastest first.
inline constexpr const char* where =
    "WHERE f.name = ?1 AND d.name = ?2 AND p.size_text = ?3 AND p.args_text = ?4 "
    "ORDER BY r.median_ms, r.id LIMIT 1";

// The same among the sweeps (kind 'sweep') of one template of the family (?5 template hash).
inline constexpr const char* where_template =
    "WHERE f.name = ?1 AND d.name = ?2 AND p.size_text = ?3 AND p.args_text = ?4 AND f.template_hash = ?5 "
    "AND s.kind = 'sweep' ORDER BY r.median_ms, r.id LIMIT 1";

// SELECT `columns` from the best result, with `joins` (tables reached from r) in between.
inline std::string select(const std::string& columns, const std::string& joins = "") {
  return "SELECT " + columns + " " + from + joins + where;
}

// The same on one template (where_template).
inline std::string select_on_template(const std::string& columns, const std::string& joins = "") {
  return "SELECT " + columns + " " + from + joins + where_template;
}

}  // namespace tiletune::best_query
