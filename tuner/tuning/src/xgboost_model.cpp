#include "xgboost_model.hpp"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "tiletune/dynamic_library.hpp"

namespace tiletune {

namespace {

using Handle = void*;
using Count = std::uint64_t;  // XGBoost's bst_ulong

// The few functions of XGBoost's C API a regressor needs (declared as in xgboost/c_api.h, version 1.x).
struct XgboostApi {
  int (*matrix_from_dense)(const float*, Count, Count, float, Handle*) = nullptr;
  int (*matrix_set_float)(Handle, const char*, const float*, Count) = nullptr;
  int (*matrix_free)(Handle) = nullptr;
  int (*booster_create)(const Handle*, Count, Handle*) = nullptr;
  int (*booster_free)(Handle) = nullptr;
  int (*booster_set)(Handle, const char*, const char*) = nullptr;
  int (*booster_update)(Handle, int, Handle) = nullptr;
  int (*booster_predict)(Handle, Handle, int, unsigned, int, Count*, const float**) = nullptr;
  const char* (*last_error)() = nullptr;
  std::string error;
};

const XgboostApi& api() {
  static const XgboostApi a = [] {
    XgboostApi x;
    const char* env = std::getenv("TILETUNE_XGBOOST");
    const std::vector<std::string> names = env && *env
                                               ? std::vector<std::string>{env}
                                               : std::vector<std::string>{"libxgboost.so.0", "libxgboost.so"};
    static const DynamicLibrary lib(names);
    if (!lib.ok()) {
      x.error = "XGBoost cannot be opened (" + lib.error() +
                "): install libxgboost-dev (Debian) or name the library in TILETUNE_XGBOOST";
      return x;
    }
    const auto get = [&](auto& fn, const char* symbol) {
      if (!lib.get(fn, symbol) && x.error.empty()) x.error = "XGBoost (" + lib.name() + ") lacks " + symbol;
    };
    get(x.matrix_from_dense, "XGDMatrixCreateFromMat");
    get(x.matrix_set_float, "XGDMatrixSetFloatInfo");
    get(x.matrix_free, "XGDMatrixFree");
    get(x.booster_create, "XGBoosterCreate");
    get(x.booster_free, "XGBoosterFree");
    get(x.booster_set, "XGBoosterSetParam");
    get(x.booster_update, "XGBoosterUpdateOneIter");
    get(x.booster_predict, "XGBoosterPredict");
    get(x.last_error, "XGBGetLastError");
    return x;
  }();
  return a;
}

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("XGBoost ") + what + " failed: " + api().last_error());
}

// A DMatrix over dense rows, freed at scope exit.
std::shared_ptr<void> dense_matrix(const std::vector<float>& x, std::size_t columns) {
  Handle m = nullptr;
  check(api().matrix_from_dense(x.data(), x.size() / columns, columns, NAN, &m), "XGDMatrixCreateFromMat");
  return {m, [](Handle h) { api().matrix_free(h); }};
}

}  // namespace

const std::string& xgboost_unavailable() { return api().error; }

BoostedTrees::BoostedTrees(int rounds, std::uint64_t seed) : rounds_(rounds), seed_(seed) {
  if (!xgboost_unavailable().empty()) throw std::runtime_error(xgboost_unavailable());
}

void BoostedTrees::fit(const std::vector<float>& x, std::size_t columns, const std::vector<float>& y) {
  const auto m = dense_matrix(x, columns);
  check(api().matrix_set_float(m.get(), "label", y.data(), y.size()), "XGDMatrixSetFloatInfo");
  Handle b = nullptr;
  Handle dmats[] = {m.get()};
  check(api().booster_create(dmats, 1, &b), "XGBoosterCreate");
  booster_ = {b, [](Handle h) { api().booster_free(h); }};
  // Small trees and one thread: a fit over a few hundred rows is quick, and the same on every machine.
  const std::pair<const char*, std::string> params[] = {
      {"nthread", "1"},   {"seed", std::to_string(seed_ % 2147483647)},
      {"max_depth", "6"}, {"eta", "0.3"},
      {"subsample", "1"}, {"min_child_weight", "1"},
      {"verbosity", "0"}, {"tree_method", "exact"}};
  for (const auto& [k, v] : params) check(api().booster_set(b, k, v.c_str()), "XGBoosterSetParam");
  for (int i = 0; i < rounds_; ++i) check(api().booster_update(b, i, m.get()), "XGBoosterUpdateOneIter");
}

std::vector<float> BoostedTrees::predict(const std::vector<float>& x, std::size_t columns) const {
  if (!booster_) throw std::logic_error("BoostedTrees::predict before fit");
  const auto m = dense_matrix(x, columns);
  Count n = 0;
  const float* out = nullptr;
  check(api().booster_predict(booster_.get(), m.get(), 0, 0, 0, &n, &out), "XGBoosterPredict");
  return {out, out + n};
}

}  // namespace tiletune
