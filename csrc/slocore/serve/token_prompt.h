// A prompt given as token ids, read once at the router's boundary: its smallest and largest
// id (the vocabulary check) and its prefix segments (core/prefix.h, id_block_segments), in one
// pass instead of one Python pass per use (field checks, prompt length, prefix identity).
#pragma once
#include <cstdint>
#include <vector>

#include "slocore/core/request.h"

namespace slocore {

struct TokenPrompt {
  int64_t lo = 0;                       // smallest id
  int64_t hi = 0;                       // largest id
  std::vector<PrefixSegment> segments;  // id_block_segments(ids, block_size, block_size, max_blocks)
};

// `ids` non-empty; block_size >= 1, max_blocks >= 0 (InvalidArgument otherwise).
TokenPrompt token_prompt(const std::vector<int64_t>& ids, int block_size, int64_t max_blocks);

}  // namespace slocore
