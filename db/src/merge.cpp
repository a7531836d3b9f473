// Merging databases (Slurm array tasks, one database each) into one: every sweep of every input, in one
// transaction on the output, sweep by sweep so that memory follows the largest sweep, not the inputs.
#include <sqlite3.h>
#include <sys/stat.h>

#include <map>
#include <ostream>
#include <set>

#include "pruned.hpp"
#include "store_rows.hpp"

namespace tiletune {

namespace {

namespace fs = std::filesystem;

// ---- the output must not be an input ----

std::optional<std::pair<dev_t, ino_t>> file_id(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return std::make_pair(info.st_dev, info.st_ino);
}

// The absolute path with every link followed, a dangling one included (SQLite writes through it).
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  fs::path current = fs::absolute(path, ec);
  for (int hops = 0; hops < 40 && fs::is_symlink(current, ec); ++hops) {
    const fs::path target = fs::read_symlink(current, ec);
    if (ec) break;
    current = target.is_absolute() ? target : current.parent_path() / target;
  }
  const fs::path canonical = fs::weakly_canonical(current, ec);
  return ec ? current.lexically_normal() : canonical;
}

void check_not_an_input(const std::vector<fs::path>& inputs, const fs::path& output) {
  const auto output_id = file_id(output);
  const fs::path output_path = resolved(output);
  for (const fs::path& input : inputs) {
    for (const std::string suffix : {"", "-wal", "-shm", "-journal"}) {
      const fs::path file = input.string() + suffix;
      const auto id = file_id(file);
      const bool same = (output_id && id && *output_id == *id) || output_path == resolved(file) ||
                        output_path == fs::path(resolved(input).string() + suffix);
      if (!same) continue;
      throw StoreError(
          sql::one_line("merge: the output " + output.string() + " is " +
                        (suffix.empty() ? "the input " + input.string()
                                        : "the " + suffix + " file of the input " + input.string()) +
                        ": refusing to write over an input (nothing written)"));
    }
  }
}

// ---- reading an input ----

void check_pages(const sql::Db& db) {
  sql::Stmt check = db.prepare("PRAGMA quick_check");
  if (!check.step() || check.column_text(0) != "ok")
    throw StoreError(
        "the database is corrupt (PRAGMA quick_check: " + rows::shown(check.column_text(0), 120) + ")");
}

// A read transaction: every query sees the same snapshot of the input.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(const sql::Db& db) : db_(db) { db_.exec("BEGIN"); }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;
  ~ReadSnapshot() { sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr); }

 private:
  const sql::Db& db_;
};

// ---- comparing two copies of one sweep ----

struct StoredSweep {
  std::int64_t id = 0;
  std::string family, template_hash, size_text, args_text;
  std::int64_t result_count = 0;
};

std::optional<StoredSweep> stored_sweep(const sql::Db& db, const std::string& uid) {
  sql::Stmt select = db.prepare(
      "SELECT s.id, f.name, f.template_hash, p.size_text, p.args_text, "
      "(SELECT COUNT(*) FROM results r WHERE r.sweep_id = s.id) FROM sweeps s "
      "JOIN families f ON f.id = s.family_id JOIN problems p ON p.id = s.problem_id WHERE s.uid = ?1");
  select.bind(1, uid);
  if (!select.step()) return std::nullopt;
  return StoredSweep{select.column_int64(0), select.column_text(1), select.column_text(2),
                     select.column_text(3),  select.column_text(4), select.column_int64(5)};
}

sql::Stmt results_by_params(const sql::Db& db, std::int64_t sweep_id) {
  sql::Stmt select = db.prepare(
      "SELECT c.params_text, r.outcome, r.median_ms FROM results r "
      "JOIN configurations c ON c.id = r.configuration_id WHERE r.sweep_id = ?1 ORDER BY c.params_text");
  select.bind(1, sweep_id);
  return select;
}

std::string median_text(const std::optional<double>& median) {
  return median ? rows::number_text(*median) + " ms" : std::string("no time");
}

// Two copies of one sweep (one uid), compared by each result's params, outcome and median.
struct Comparison {
  std::optional<std::string> disagreement;  // another family or problem, or a result both hold that differs
  std::int64_t only_kept = 0;               // results only the stored copy holds
  std::set<std::string> only_incoming;      // params of the results only the incoming copy holds
  std::string example_only_kept;
};

// Walks both copies' results side by side in params order; memory holds the incoming copy's extra params.
// Another family or problem under the same uid; nullopt when both copies name the same.
std::optional<std::string> sweep_disagreement(const StoredSweep& kept, const SweepInfo& incoming) {
  if (kept.family != incoming.family || kept.template_hash != incoming.template_hash)
    return "family " + kept.family + " (" + kept.template_hash + ") there, " + incoming.family + " (" +
           incoming.template_hash + ") here";
  if (kept.size_text != incoming.problem.size_text() || kept.args_text != incoming.problem.args_text())
    return "problem " + kept.size_text + " there, " + incoming.problem.size_text() + " here";
  return std::nullopt;
}

// One copy's results in params order; the incoming copy's ok results as they would be stored (pruned where
// the plan refuses them).
class ResultRows {
 public:
  struct Row {
    std::string params, outcome;
    std::optional<double> median;
  };
  ResultRows(const sql::Db& db, std::int64_t sweep_id, const SweepInfo* incoming = nullptr,
             const ImportPlanCheck* check = nullptr)
      : stmt_(results_by_params(db, sweep_id)), incoming_(incoming), check_(check) {}

  std::optional<Row> next() {
    if (!stmt_.step()) return std::nullopt;
    Row row{stmt_.column_text(0), stmt_.column_text(1), stmt_.column_optional_double(2)};
    if (row.outcome == "ok" && check_ != nullptr && *check_ &&
        !(*check_)(incoming_->family, incoming_->device, incoming_->problem, params_from_text(row.params))
             .empty())
      row = Row{row.params, "pruned", std::nullopt};
    return row;
  }

 private:
  sql::Stmt stmt_;
  const SweepInfo* incoming_;
  const ImportPlanCheck* check_;
};

// How two results of the same params differ; nullopt when they agree.
std::optional<std::string> result_disagreement(const ResultRows::Row& x, const ResultRows::Row& y) {
  if (x.outcome != y.outcome) return x.params + ": " + x.outcome + " there, " + y.outcome + " here";
  if (x.median != y.median)
    return x.params + ": median " + median_text(x.median) + " there, " + median_text(y.median) + " here";
  return std::nullopt;
}

Comparison compare(const sql::Db& out, const StoredSweep& kept, const sql::Db& in, const SweepInfo& incoming,
                   const ImportPlanCheck& check) {
  Comparison c;
  c.disagreement = sweep_disagreement(kept, incoming);
  if (c.disagreement) return c;
  ResultRows a(out, kept.id), b(in, incoming.id, &incoming, &check);
  std::optional<ResultRows::Row> x = a.next(), y = b.next();
  while (x || y) {
    if (x && (!y || x->params < y->params)) {
      if (c.only_kept++ == 0) c.example_only_kept = x->params;
      x = a.next();
    } else if (y && (!x || y->params < x->params)) {
      c.only_incoming.insert(y->params);
      y = b.next();
    } else {
      if (!c.disagreement) c.disagreement = result_disagreement(*x, *y);
      x = a.next();
      y = b.next();
    }
  }
  return c;
}

// ---- writing one sweep ----

// A sweep's rows on the output, or nothing of them: SAVEPOINT, then RELEASE or ROLLBACK TO.
class Savepoint {
 public:
  explicit Savepoint(const sql::Db& db) : db_(db) { db_.exec("SAVEPOINT merge_sweep"); }
  Savepoint(const Savepoint&) = delete;
  Savepoint& operator=(const Savepoint&) = delete;
  ~Savepoint() {
    if (open_)
      sqlite3_exec(db_.get(), "ROLLBACK TO merge_sweep; RELEASE merge_sweep", nullptr, nullptr, nullptr);
  }
  void release() {
    db_.exec("RELEASE merge_sweep");
    open_ = false;
  }

 private:
  const sql::Db& db_;
  bool open_ = true;
};

bool device_stored(const sql::Db& db, const std::string& uuid) {
  sql::Stmt select = db.prepare("SELECT 1 FROM devices WHERE uuid = ?1");
  select.bind(1, uuid);
  return select.step();
}

std::string describe(const SweepInfo& s) {
  std::string problem = s.problem.size_text();
  if (!s.problem.args_text().empty()) problem += " " + s.problem.args_text();
  return "sweep " + s.uid + " (" + s.family + " " + problem + " on " + s.device.name + ")";
}

// The device's row on the output; nullopt with the store's reason in `refused` when the output refuses it
// (another name, architecture or SM count under the same uuid). Any other failure throws.
std::optional<std::int64_t> device_row(const sql::Db& out, const DeviceRecord& device, std::string& refused) {
  try {
    return rows::upsert_device(out, device, rows::OnConflict::keep);
  } catch (const StoreError& e) {
    // A refusal writes nothing and leaves the transaction open; a failed write (a full disk) may end it.
    if (sqlite3_get_autocommit(out.get()) != 0 || !device_stored(out, device.uuid)) throw;
    refused = e.what();
    return std::nullopt;
  }
}

// Writes the incoming copy's results (those named in `only`, when given) to the output sweep `to`, each held
// to the import's rules; returns how many.
std::int64_t copy_results(const sql::Db& out, std::int64_t to, std::int64_t family_id, const sql::Db& in,
                          const SweepInfo& s, const ImportPlanCheck& check,
                          const std::set<std::string>* only = nullptr) {
  rows::ResultWriter writer(out, family_id);
  std::int64_t written = 0;
  for (const StoredResult& r : rows::select_results(in, s.id)) {
    const std::string params = params_to_text(r.record.params);
    if (only != nullptr && only->count(params) == 0) continue;
    rows::check_measurement(r.record, s.kind == "sweep",
                            [&](const std::string& key) { return "result " + params + ": " + key; });
    writer.write(to, checked_against_plan(r.record, check, s.family, s.device, s.problem, "merged as ok"),
                 r.measured_at);
    ++written;
  }
  return written;
}

// Adds the sweep, every result as stored and its pruned counts, held to the import's rules (it is what an
// export and an import would carry); returns the results added, or nullopt when the output refuses its
// device.
std::optional<std::int64_t> copy_sweep(const sql::Db& out, const sql::Db& in, const SweepInfo& s,
                                       const ImportPlanCheck& check, std::string& refused) {
  rows::ImportedSweep checked;
  checked.uid = s.uid;
  checked.device = s.device;
  checked.family = s.family;
  checked.kind = s.kind;
  checked.status = s.status;
  checked.started_at = s.started_at;
  rows::check_sweep(checked, [](const std::string& key) { return key; });

  Savepoint savepoint(out);
  rows::SweepRow row;
  const auto device_id = device_row(out, s.device, refused);
  if (!device_id) return std::nullopt;
  row.device_id = *device_id;
  row.family_id =
      rows::upsert_family(out, s.family, s.template_hash,
                          rows::family_description(in, s.family, s.template_hash), rows::OnConflict::keep);
  row.problem_id = rows::upsert_problem(out, s.problem);
  row.uid = s.uid;
  row.space_hash = s.space_hash;
  row.kind = s.kind;
  row.strategy = s.strategy;
  row.status = s.status;
  row.started_at = s.started_at;
  if (!s.ended_at.empty()) row.ended_at = s.ended_at;
  row.tiletune_version = s.tiletune_version;
  row.git_sha = s.git_sha;
  const std::int64_t id = rows::insert_sweep(out, row);
  const std::int64_t added = copy_results(out, id, row.family_id, in, s, check);
  rows::add_pruned(out, id, rows::select_pruned(in, s.id), "pruned");
  savepoint.release();
  return added;
}

// The stored copy is an earlier snapshot of the incoming one (a sweep copied while it ran): adds the results
// it lacks, held to the import's rules, and takes the incoming copy's status and end time.
std::int64_t extend_sweep(const sql::Db& out, const StoredSweep& kept, const sql::Db& in, const SweepInfo& s,
                          const std::set<std::string>& missing, const ImportPlanCheck& check) {
  const std::int64_t added =
      copy_results(out, kept.id, rows::sweep_family_id(out, kept.id), in, s, check, &missing);
  sql::Stmt update = out.prepare("UPDATE sweeps SET status = ?1, ended_at = ?2 WHERE id = ?3");
  update.bind(1, s.status)
      .bind(2, s.ended_at.empty() ? std::nullopt : std::optional<std::string>(s.ended_at));
  update.bind(3, kept.id).run();
  return added;
}

// "import: WHERE WHY" from the importer's checks reads "WHERE WHY" here.
std::string without_import_prefix(std::string message) {
  if (message.rfind("import: ", 0) == 0) message.erase(0, 8);
  return message;
}

int shard_groups(const sql::Db& db) {
  return static_cast<int>(
      db.query_int("SELECT COUNT(*) FROM (SELECT 1 FROM sweeps s JOIN families f ON f.id = s.family_id "
                   "JOIN devices d ON d.id = s.device_id WHERE s.kind = 'sweep' "
                   "GROUP BY f.name, d.name, s.problem_id HAVING COUNT(*) > 1)"));
}

void add_counts(Store::MergeCounts& total, const Store::MergeCounts& part) {
  total.sweeps_added += part.sweeps_added;
  total.sweeps_skipped += part.sweeps_skipped;
  total.sweeps_conflicting += part.sweeps_conflicting;
  total.results_added += part.results_added;
}

// Puts back an output this merge created (or found empty) when the merge fails.
void restore_new_output(const fs::path& output, bool existed) {
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(output.string() + suffix, ec);
  if (existed)
    fs::resize_file(output, 0, ec);
  else
    fs::remove(output, ec);
}

// An input that does not open, or whose pages are not sound, named once.
std::string input_refused(const fs::path& input, const std::string& why) {
  return sql::one_line(
      "merge: " + (why.find(input.string()) == std::string::npos ? input.string() + ": " + why : why) +
      " (nothing written)");
}

// The input a sweep is read from, and its counts.
struct Source {
  const sql::Db& in;
  const std::string& input;  // the path as given
  Store::MergeCounts& counts;
};

// The sweeps of every input into one output, remembering which input each added sweep came from.
class Merger {
 public:
  Merger(const sql::Db& out, std::ostream& report, const ImportPlanCheck& check)
      : out_(out), report_(report), check_(check) {}

  // Every sweep of one input: added, skipped, or reported as a conflict.
  void merge_input(const Source& from) {
    const ReadSnapshot snapshot(from.in);
    for (const SweepInfo& s : rows::sweeps_for_export(from.in, "", "")) {
      try {
        merge_sweep(from, s);
      } catch (const StoreError& e) {
        throw StoreError(describe(s) + ": " + without_import_prefix(e.what()));
      } catch (const std::invalid_argument& e) {
        throw StoreError(describe(s) + ": " + e.what());
      }
    }
  }

 private:
  void conflict(const Source& from, const SweepInfo& s, const std::string& why) {
    ++from.counts.sweeps_conflicting;
    report_ << sql::one_line("conflict: " + from.input + ": " + describe(s) + ": " + why) << "\n";
  }

  void merge_sweep(const Source& from, const SweepInfo& s) {
    if (const auto kept = stored_sweep(out_, s.uid)) {
      merge_copies(from, *kept, s);
      return;
    }
    std::string refused;
    const auto added = copy_sweep(out_, from.in, s, check_, refused);
    if (!added) {
      conflict(from, s, refused + "; sweep skipped");
      return;
    }
    merged_from_.emplace(s.uid, from.input);
    ++from.counts.sweeps_added;
    from.counts.results_added += *added;
  }

  // A sweep whose uid the output holds already: skipped when both copies agree, extended when the output's
  // is an earlier snapshot of it, else kept as it is there.
  void merge_copies(const Source& from, const StoredSweep& kept, const SweepInfo& s) {
    const Comparison c = compare(out_, kept, from.in, s, check_);
    // Where the incoming copy holds every result of the stored one, its pruned counts are at least as far
    // along (they only grow); record_pruned's rule keeps the larger count of each reason.
    if (!c.disagreement && c.only_kept == 0)
      rows::add_pruned(out_, kept.id, rows::select_pruned(from.in, s.id), "pruned");
    if (!c.disagreement && c.only_kept == 0 && c.only_incoming.empty()) {
      ++from.counts.sweeps_skipped;
      return;
    }
    const auto found = merged_from_.find(s.uid);
    const std::string there = found == merged_from_.end() ? "the output" : found->second;
    const std::string sizes =
        std::to_string(kept.result_count) + " results there, " + std::to_string(s.result_count) + " here";
    if (!c.disagreement && c.only_kept == 0) {
      const std::int64_t added = extend_sweep(out_, kept, from.in, s, c.only_incoming, check_);
      from.counts.results_added += added;
      conflict(from, s,
               "a more complete copy of the sweep in " + there + " (" + sizes +
                   ", the same where both have a result): added the " + std::to_string(added) +
                   (added == 1 ? " result" : " results") + " it lacked and took status '" + s.status + "'");
    } else if (!c.disagreement && c.only_incoming.empty()) {
      conflict(from, s,
               "a less complete copy of the sweep in " + there + " (" + sizes +
                   ", the same where both have a result); kept the more complete copy from " + there);
    } else {
      const std::string why = c.disagreement
                                  ? *c.disagreement
                                  : sizes + ", each with results the other lacks: " + c.example_only_kept +
                                        " only there, " + *c.only_incoming.begin() + " only here";
      conflict(from, s,
               "the same uid in " + there + " has other content (" + why + "); kept the copy from " + there);
    }
  }

  const sql::Db& out_;
  std::ostream& report_;
  const ImportPlanCheck& check_;
  std::map<std::string, std::string> merged_from_;  // uid -> the input it came from in this merge
};

}  // namespace

Store::MergeSummary Store::merge(const std::vector<fs::path>& inputs, const fs::path& output,
                                 std::ostream& report, const ImportPlanCheck& check) {
  if (inputs.empty()) throw StoreError("merge: no input databases");
  check_not_an_input(inputs, output);

  // Every input is checked before the output is opened (opening creates it).
  for (const fs::path& input : inputs) {
    try {
      const Store store = Store::open(input, Mode::read_only);
      check_pages(store.impl_->db);
    } catch (const StoreError& e) {
      throw StoreError(input_refused(input, e.what()));
    }
  }

  std::error_code ec;
  const bool existed = fs::exists(fs::symlink_status(output, ec));
  const bool was_empty = existed && fs::is_regular_file(output, ec) && fs::file_size(output, ec) == 0;
  const bool restore = !existed || was_empty;  // what this merge created, it removes on failure
  MergeSummary summary;
  summary.total.input = "total";
  try {
    Store out_store = Store::open(output, Mode::read_write);
    const sql::Db& out = out_store.impl_->db;
    sql::Transaction transaction(out);
    Merger merger(out, report, check);
    for (const fs::path& input : inputs) {
      MergeCounts counts;
      counts.input = input.string();
      try {
        // Read-only: an input is never written, and an older schema is read as it is.
        const Store opened = Store::open(input, Mode::read_only);
        merger.merge_input(Source{opened.impl_->db, counts.input, counts});
      } catch (const StoreError& e) {
        throw StoreError("merge: " + input.string() + ": " + e.what());
      } catch (const std::invalid_argument& e) {  // a hand-edited row that does not parse
        throw StoreError("merge: " + input.string() + ": " + e.what());
      }
      add_counts(summary.total, counts);
      summary.inputs.push_back(std::move(counts));
    }
    summary.shard_groups = shard_groups(out);
    transaction.commit();
  } catch (const std::exception& e) {
    if (restore) restore_new_output(output, existed);
    std::string why = e.what();
    if (why.rfind("merge: ", 0) != 0) why = "merge: " + output.string() + ": " + why;
    throw StoreError(sql::one_line(why + " (nothing written)"));
  }
  return summary;
}

}  // namespace tiletune
