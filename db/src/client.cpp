#include "tiletune/client.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "best_query.hpp"
#include "schema.hpp"
#include "sqlite.hpp"

namespace tiletune {

namespace {

constexpr const char* best_columns =
    "d.name, r.median_ms, r.metric, r.metric_unit, c.params_text, f.template_hash, s.id";
constexpr const char* best_joins = "CROSS JOIN configurations c ON c.id = r.configuration_id ";
const std::string best_sql = best_query::select(best_columns, best_joins);
const std::string best_on_template_sql = best_query::select_on_template(best_columns, best_joins);

// The problems tuned for a family on some devices (whether anything there is ok is asked afterwards, of the
// nearest ones only: a per-sweep subquery here would cost more than the whole lookup).
constexpr std::string_view candidates_sql =
    "SELECT DISTINCT d.name, p.size_text, p.args_text "
    "FROM families f CROSS JOIN devices d CROSS JOIN sweeps s ON s.family_id = f.id AND s.device_id = d.id "
    "CROSS JOIN problems p ON p.id = s.problem_id ";

// Lookups repeat (an application asks the same question at every launch site), so answers are kept until
// another connection commits, which PRAGMA data_version reports. The bound keeps a program that asks about
// ever-new sizes from growing without limit.
constexpr std::size_t cache_limit = 4096;

struct Candidate {
  bool shape_differs = false;
  double distance = 0.0;
  std::string device_name, size_text, args_text;
  bool operator<(const Candidate& o) const {
    return std::tie(shape_differs, distance, device_name, size_text, args_text) <
           std::tie(o.shape_differs, o.distance, o.device_name, o.size_text, o.args_text);
  }
};

}  // namespace

namespace {
// |log2(tuned / query)| for positive values; values that are not both positive (an argument may be 0 or
// negative) count 1 for differing plus the log-distance of their magnitudes.
double value_distance(std::int64_t tuned, std::int64_t query) {
  if (tuned == query) return 0.0;
  if (tuned > 0 && query > 0)
    return std::fabs(std::log2(static_cast<double>(tuned) / static_cast<double>(query)));
  return 1.0 + std::fabs(std::log2((std::fabs(static_cast<double>(tuned)) + 1.0) /
                                   (std::fabs(static_cast<double>(query)) + 1.0)));
}

}  // namespace

std::pair<bool, double> problem_distance(const ProblemKey& tuned, const ProblemKey& query) {
  bool shape_differs = tuned.dims.size() != query.dims.size() || tuned.args.size() != query.args.size();
  double distance = 0.0;
  for (std::size_t i = 0; i < std::min(tuned.dims.size(), query.dims.size()); ++i)
    distance += value_distance(tuned.dims[i], query.dims[i]);
  for (const auto& [name, value] : query.args) {
    const auto it = tuned.args.find(name);
    if (it == tuned.args.end()) {
      shape_differs = true;
    } else {
      distance += value_distance(it->second, value);
    }
  }
  return {shape_differs, distance};
}

std::string_view to_string(Match match) {
  switch (match) {
    case Match::exact:
      return "exact";
    case Match::nearest_size:
      return "nearest_size";
    case Match::same_arch:
      return "same_arch";
    case Match::not_found:
      return "not_found";
  }
  return "unknown";
}

struct Client::Impl {
  sql::Db db;
  // Prepared once in open(): a lookup then costs only its steps.
  sql::Stmt begin, commit, data_version, best_of, best_of_template, by_device, by_arch, family_defaults;
  std::mutex mutex;  // one connection and its statements; best() is const and may be called from any thread

  struct Cached {
    Lookup lookup;
    bool uses_fallback = false;  // the caller's fallback goes in at each call
  };
  std::unordered_map<std::string, Cached> cache;
  std::int64_t cached_version = -1;

  // One read transaction per lookup: the file locks are taken once, and every step sees the same snapshot.
  class ReadTransaction {
   public:
    explicit ReadTransaction(Impl& impl) : impl_(impl) {
      const sql::ResetOnExit reset(impl_.begin);
      impl_.begin.run();
    }
    ReadTransaction(const ReadTransaction&) = delete;
    ReadTransaction& operator=(const ReadTransaction&) = delete;
    ~ReadTransaction() {
      const int rc = sqlite3_step(impl_.commit.get());
      impl_.commit.reset();
      if (rc != SQLITE_DONE && sqlite3_get_autocommit(impl_.db.get()) == 0 &&
          sqlite3_exec(impl_.db.get(), "ROLLBACK", nullptr, nullptr, nullptr) != SQLITE_OK)
        std::fprintf(stderr, "tiletune: ending a read transaction on %s failed: %s\n",
                     impl_.db.path().c_str(), sqlite3_errmsg(impl_.db.get()));
    }

   private:
    Impl& impl_;
  };

  Lookup best(const Query& query, const Params& fallback) {
    const ReadTransaction transaction(*this);
    {
      const sql::ResetOnExit reset(data_version);
      const std::int64_t version = data_version.step() ? data_version.column_int64(0) : -1;
      if (version != cached_version || cache.size() >= cache_limit) {
        cache.clear();
        cached_version = version;
      }
    }
    std::string key = query.family;
    for (const std::string* part : {&query.device_name, &query.arch}) (key += '\x1f') += *part;
    (key += '\x1f') += query.problem.size_text();
    (key += '\x1f') += query.problem.args_text();
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(std::move(key), find(query)).first;
    Lookup lookup = it->second.lookup;
    if (it->second.uses_fallback) lookup.params = fallback;
    return lookup;
  }

  // The fastest ok configuration for exactly this family, device name and problem.
  std::optional<Lookup> best_for(const std::string& family, const std::string& device_name,
                                 const std::string& size_text, const std::string& args_text, Match match) {
    const sql::ResetOnExit reset(best_of);
    best_of.bind(1, family).bind(2, device_name).bind(3, size_text).bind(4, args_text);
    if (!best_of.step()) return std::nullopt;
    return read_best(best_of, size_text, args_text, match);
  }

  // The row of best_sql or best_on_template_sql as a lookup.
  static Lookup read_best(sql::Stmt& row, const std::string& size_text, const std::string& args_text,
                          Match match) {
    Lookup lookup;
    lookup.match = match;
    lookup.device_name = row.column_text(0);
    lookup.median_ms = row.column_optional_double(1);
    lookup.metric = row.column_optional_double(2);
    lookup.metric_unit = row.column_text(3);
    lookup.params = params_from_text(row.column_text(4));
    lookup.template_hash = row.column_text(5);
    lookup.sweep_id = row.column_int64(6);
    lookup.problem.dims = parse_size_text(size_text);
    lookup.problem.args = parse_args_text(args_text);
    return lookup;
  }

  std::optional<Lookup> best_on_template(const std::string& family, const std::string& device_name,
                                         const ProblemKey& problem, const std::string& template_hash) {
    const ReadTransaction transaction(*this);
    const std::string size = problem.size_text(), args = problem.args_text();
    const sql::ResetOnExit reset(best_of_template);
    best_of_template.bind(1, family).bind(2, device_name).bind(3, size).bind(4, args).bind(5, template_hash);
    if (!best_of_template.step()) return std::nullopt;
    Lookup lookup = read_best(best_of_template, size, args, Match::exact);
    lookup.message =
        "the fastest on template " + template_hash + ", sweep " + std::to_string(lookup.sweep_id);
    return lookup;
  }

  // The best configuration of the tuned problem nearest the query among the candidates. Problems at the
  // same distance (the same size on several devices) go to the fastest; one with nothing ok gives way.
  std::optional<Lookup> nearest(sql::Stmt& candidates, const Query& query, Match match) {
    std::vector<Candidate> ranked;
    {
      const sql::ResetOnExit reset(candidates);
      while (candidates.step()) {
        const ProblemKey tuned{parse_size_text(candidates.column_view(1)),
                               parse_args_text(candidates.column_view(2))};
        const auto [shape_differs, distance] = problem_distance(tuned, query.problem);
        ranked.push_back({shape_differs, distance, candidates.column_text(0), candidates.column_text(1),
                          candidates.column_text(2)});
      }
    }
    std::sort(ranked.begin(), ranked.end());
    for (std::size_t first = 0; first < ranked.size();) {
      std::size_t last = first;
      std::optional<Lookup> best;
      for (; last < ranked.size() && ranked[last].shape_differs == ranked[first].shape_differs &&
             ranked[last].distance == ranked[first].distance;
           ++last) {
        const Candidate& c = ranked[last];
        auto lookup = best_for(query.family, c.device_name, c.size_text, c.args_text, match);
        if (lookup && (!best || lookup->median_ms < best->median_ms)) best = std::move(lookup);
      }
      if (best) return best;
      first = last;
    }
    return std::nullopt;
  }

  Cached find(const Query& query) {
    const std::string size = query.problem.size_text();
    const std::string args = query.problem.args_text();
    const std::string asked = problem_text(size, args);
    if (auto lookup = best_for(query.family, query.device_name, size, args, Match::exact)) {
      lookup->message = "exact match: tuned on " + lookup->device_name + " for " + asked;
      return {std::move(*lookup), false};
    }
    by_device.bind(1, query.family).bind(2, query.device_name);
    if (auto lookup = nearest(by_device, query, Match::nearest_size)) {
      lookup->message = "no exact match for " + asked + ": nearest tuned size " +
                        problem_text(lookup->problem.size_text(), lookup->problem.args_text()) +
                        " on the same device";
      return {std::move(*lookup), false};
    }
    if (!query.arch.empty()) {
      by_arch.bind(1, query.family).bind(2, query.arch);
      if (auto lookup = nearest(by_arch, query, Match::same_arch)) {
        lookup->message = "nothing tuned on " + query.device_name + ": nearest tuned size " +
                          problem_text(lookup->problem.size_text(), lookup->problem.args_text()) + " on " +
                          lookup->device_name + " (same arch " + query.arch + ")";
        return {std::move(*lookup), false};
      }
    }
    Lookup lookup;
    lookup.match = Match::not_found;
    lookup.message = "no tuned configuration for " + query.family + " on " + query.device_name +
                     (query.arch.empty() ? "" : " (" + query.arch + ")");
    const sql::ResetOnExit reset(family_defaults);
    family_defaults.bind(1, query.family);
    if (family_defaults.step() && !family_defaults.is_null(0)) {
      lookup.params = params_from_text(family_defaults.column_text(0));
      lookup.message += ": family defaults";
      return {std::move(lookup), false};
    }
    lookup.message += ": caller's fallback";
    return {std::move(lookup), true};
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

std::optional<Client> Client::open(const std::filesystem::path& path, std::string* error) noexcept {
  try {
    auto impl = std::make_unique<Impl>();
    sql::Db::check_path(path, sql::Db::Access::read_only);
    try {
      schema::check_file_header(path);
    } catch (const StoreError& e) {
      throw StoreError("cannot open database " + path.string() + ": " + e.what());
    }
    impl->db = sql::Db::open(path, sql::Db::Access::read_only);
    try {
      if (schema::check_known(impl->db) == 0)
        throw StoreError("not a tiletune database (no tiletune schema)");
      const sql::Db& db = impl->db;
      impl->begin = db.prepare("BEGIN", true);
      impl->commit = db.prepare("COMMIT", true);
      impl->data_version = db.prepare("PRAGMA data_version", true);
      impl->best_of = db.prepare(best_sql, true);
      impl->best_of_template = db.prepare(best_on_template_sql, true);
      impl->by_device = db.prepare(std::string(candidates_sql) + "WHERE f.name = ?1 AND d.name = ?2", true);
      impl->by_arch = db.prepare(std::string(candidates_sql) + "WHERE f.name = ?1 AND d.arch = ?2", true);
      // The newest template of the family that states its defaults.
      impl->family_defaults = db.prepare(
          "SELECT default_params_text FROM families WHERE name = ?1 "
          "ORDER BY default_params_text IS NULL, id DESC LIMIT 1",
          true);
    } catch (const StoreError& e) {
      throw StoreError("cannot open database " + path.string() + ": " + e.what());
    }
    return Client(std::move(impl));
  } catch (const std::exception& e) {
    if (error != nullptr) *error = sql::one_line(e.what());
  } catch (...) {
    if (error != nullptr) *error = "cannot open database " + path.string() + ": unknown error";
  }
  return std::nullopt;
}

Lookup Client::best(const Query& query, const Params& fallback) const noexcept {
  try {
    const std::lock_guard lock(impl_->mutex);
    return impl_->best(query, fallback);
  } catch (const std::exception& e) {
    try {
      Lookup lookup;
      lookup.params = fallback;
      lookup.message = sql::one_line(std::string("lookup failed: ") + e.what() + ": caller's fallback");
      return lookup;
    } catch (...) {
    }
  } catch (...) {
  }
  return Lookup{};
}

std::optional<Lookup> Client::best_on_template(const std::string& family, const std::string& device_name,
                                               const ProblemKey& problem, const std::string& template_hash,
                                               std::string* error) const noexcept {
  try {
    const std::lock_guard lock(impl_->mutex);
    return impl_->best_on_template(family, device_name, problem, template_hash);
  } catch (const std::exception& e) {
    if (error != nullptr) try {
        *error = sql::one_line(std::string("lookup failed: ") + e.what());
      } catch (...) {
      }
  } catch (...) {
  }
  return std::nullopt;
}

}  // namespace tiletune
