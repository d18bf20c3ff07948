// Checks of untrusted input at the library boundary (bindings, embedders): times, token
// counts, views, and size limits that refuse an allocation before it is attempted. Each
// throws InvalidArgument naming the field (errors.h) and formats nothing unless it fails: a
// router or engine plugin checks every view it passes in, at every call.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "slocore/core/instance_view.h"

namespace slocore {

// Size limits: far above any real use, far below what would exhaust memory or time.
inline constexpr int kMaxSliceRate = 4096;               // SLICE v_i tokens per cycle (TPOT >= 0.25 ms)
inline constexpr int64_t kMaxDecodeMaskCells = 1 << 24;  // rows x cols of a SLICE decode mask
inline constexpr size_t kMaxSliceTasks = 1024;           // tasks given to SLICE task selection
inline constexpr int64_t kMaxSurvivalBuckets = 1 << 20;  // SIBYL survival estimator buckets
inline constexpr int kMaxCurvePoints = 1 << 16;          // BatchLatencyCurve::from_model max_batch
inline constexpr int kMaxSimInstances = 4096;            // instances of one simulated cluster
inline constexpr double kMaxTimelinePoints = 1 << 22;    // simulator timeline samples
inline constexpr double kMinIntervalS = 1e-3;            // shortest simulator period (timeline, scaler)

// A time (`now`, an arrival): finite and >= 0.
void check_time(double t, std::string_view field);
// Optional time: NaN (absent) or finite and >= 0.
void check_optional_time(double t, std::string_view field);
// A duration or cost: finite and >= 0.
void check_duration(double s, std::string_view field);
// A token count in [min, 2^40].
void check_tokens(int64_t v, std::string_view field, int64_t min = 0);
// An instance or request id: >= 0.
void check_id(int64_t id, std::string_view field);

// One view: InstanceView::validate(), token counts in range, request ids unique.
void check_view(const InstanceView& v);
// Every view, and instance ids unique across them.
void check_views(const std::vector<InstanceView>& views);

}  // namespace slocore
