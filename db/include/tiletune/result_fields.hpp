// The value fields of a stored result, in one table. The store's SQL (the columns read and written), the JSON
// export and import, the CSV export and import, the T4 export and the Python module all walk it, so a new
// measured or planned value is its member in ResultRecord, one line here, its column in the schema
// (db/src/schema.cpp, with a migration) and its place among the CSV columns (db/src/csv.cpp).
// The params, outcome, reason, repetitions, timed runs and measured_at have formats of their own and stay
// outside it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tiletune/results.hpp"

namespace tiletune {

struct ResultField {
  enum class Type { integer, real, text };
  const char* name;  // the SQL column, the JSON key, the CSV header and the Python key
  Type type;
  std::optional<int> ResultRecord::*integer = nullptr;  // type integer: never negative
  std::optional<double> ResultRecord::*real = nullptr;  // type real
  std::string ResultRecord::*text = nullptr;            // type text
  int since_schema = 1;                                 // the first schema version whose results have it
  const char* t4_name = nullptr;                        // its T4 measurement; null: none
  const char* t4_unit = "";                             // null: the result's metric_unit
};

// In the order of the results table's columns.
const std::vector<ResultField>& result_fields();

// Calls `visit` with the field's member of `record`: a std::optional<int>, std::optional<double> or
// std::string, const where `record` is. Each reader and writer of the table is one generic visitor.
template <typename Record, typename Visit>
void visit_field(const ResultField& field, Record& record, Visit&& visit) {
  switch (field.type) {
    case ResultField::Type::integer:
      visit(record.*field.integer);
      return;
    case ResultField::Type::real:
      visit(record.*field.real);
      return;
    case ResultField::Type::text:
      visit(record.*field.text);
      return;
  }
}

}  // namespace tiletune
