// JSON forms of the problem model's values, shared by the benchmark's results, --list-json and the
// race module (common/src only).
#pragma once

#include "tut/problem.hpp"

#include <nlohmann/json.hpp>

namespace tut {

nlohmann::json to_json(const ParamValue& v);
nlohmann::json to_json(const Params& p);
nlohmann::json to_json(const Floor& f);
// name, shape, params, floor
nlohmann::json case_to_json(const ProblemEntry& p, const Case& c);

}  // namespace tut
