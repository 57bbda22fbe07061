// Scaled dot-product attention (MSL): one SIMD group per query row, online
// softmax in float32 (see mps_sdpa.mm). Uses bf16_t, load_value,
// store_value, load_float and dtype_size from copy_gemm.metal.
// Score of key j for query row i, the same on every lane of the SIMD group
// (every lane must call it: simd_sum); -INFINITY where masked.
template <typename T>
inline float sdpa_score(thread const float* qv, device const T* k_row, long j, long i, long b,
                        long h, device const uchar* mask, constant SdpaParams& p, uint lane) {
  float dot = 0.0f;
  for (int t = 0; t < AOTISHIM_SDPA_PER_LANE; ++t) {
    const long e = long(lane) + long(t) * AOTISHIM_SDPA_LANES;
    if (e < p.e) dot += qv[t] * load_value(k_row + j * p.k_strides[2] + e * p.k_strides[3]);
  }
  float score = simd_sum(dot) * p.scale;
  if (p.causal != 0 && j > i) return -INFINITY;
  if (p.has_mask != 0) {
    const long at = b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2] +
                    j * p.mask_strides[3];
    const float m = load_float(mask + at * dtype_size(p.mask_dtype), p.mask_dtype);
    if (p.mask_dtype == AOTISHIM_DT_BOOL) {
      if (m == 0.0f) return -INFINITY;
    } else {
      score += m;
    }
  }
  return score;
}

template <typename T>
[[kernel]] void aotishim_sdpa(device T* out [[buffer(0)]],
                              device float* lse [[buffer(1)]],
                              device T* probs [[buffer(2)]],
                              device const T* q [[buffer(3)]],
                              device const T* k [[buffer(4)]],
                              device const T* v [[buffer(5)]],
                              device const uchar* mask [[buffer(6)]],
                              constant SdpaParams& p [[buffer(7)]],
                              uint3 group [[threadgroup_position_in_grid]],
                              uint lane [[thread_index_in_simdgroup]],
                              uint row [[simdgroup_index_in_threadgroup]]) {
  const long i = long(group.x) * AOTISHIM_SDPA_ROWS + long(row);
  const long h = long(group.y);
  const long b = long(group.z);
  if (i >= p.l) return;  // the whole SIMD group leaves together
  const long hk = h / (p.h / p.hkv);
  device const T* q_row = q + b * p.q_strides[0] + h * p.q_strides[1] + i * p.q_strides[2];
  device const T* k_head = k + b * p.k_strides[0] + hk * p.k_strides[1];
  device const T* v_head = v + b * p.v_strides[0] + hk * p.v_strides[1];
  float qv[AOTISHIM_SDPA_PER_LANE];
  float acc[AOTISHIM_SDPA_PER_LANE];
  for (int t = 0; t < AOTISHIM_SDPA_PER_LANE; ++t) {
    const long e = long(lane) + long(t) * AOTISHIM_SDPA_LANES;
    qv[t] = e < p.e ? load_value(q_row + e * p.q_strides[3]) : 0.0f;
    acc[t] = 0.0f;
  }
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  const long s_end = (p.causal != 0 && i + 1 < p.s) ? i + 1 : p.s;
  for (long j = 0; j < s_end; ++j) {
    const float score = sdpa_score(qv, k_head, j, i, b, h, mask, p, lane);
    if (score == -INFINITY) continue;  // the same on every lane
    const float new_max = max(running_max, score);
    const float correction = exp(running_max - new_max);  // 0 while nothing was kept
    const float weight = exp(score - new_max);
    running_sum = running_sum * correction + weight;
    running_max = new_max;
    device const T* v_row = v_head + j * p.v_strides[2];
    for (int t = 0; t < AOTISHIM_SDPA_PER_LANE; ++t) {
      const long e = long(lane) + long(t) * AOTISHIM_SDPA_LANES;
      if (e < p.ev) acc[t] = acc[t] * correction + weight * load_value(v_row + e * p.v_strides[3]);
    }
  }
  // A row with every key masked: zeros, logsumexp -inf (as the cpu kernel).
  const float inv = running_sum > 0.0f ? 1.0f / running_sum : 0.0f;
  device T* out_row = out + b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2];
  for (int t = 0; t < AOTISHIM_SDPA_PER_LANE; ++t) {
    const long e = long(lane) + long(t) * AOTISHIM_SDPA_LANES;
    if (e < p.ev) store_value(out_row + e * p.out_strides[3], acc[t] * inv);
  }
  const float row_lse = running_sum > 0.0f ? running_max + log(running_sum) : -INFINITY;
  if (lane == 0) lse[b * p.lse_strides[0] + h * p.lse_strides[1] + i * p.lse_strides[2]] = row_lse;
  if (p.has_probs == 0) return;
  device T* p_row = probs + b * p.probs_strides[0] + h * p.probs_strides[1] +
                    i * p.probs_strides[2];
  for (long j = 0; j < p.s; ++j) {
    const float score = sdpa_score(qv, k_head, j, i, b, h, mask, p, lane);
    const float weight = (score == -INFINITY || row_lse == -INFINITY) ? 0.0f : exp(score - row_lse);
    if (lane == 0) store_value(p_row + j * p.probs_strides[3], weight);
  }
}

#define AOTISHIM_SDPA(NAME, T)                                                          \
  template [[host_name(NAME)]] [[kernel]] void aotishim_sdpa<T>(                         \
      device T* out [[buffer(0)]], device float* lse [[buffer(1)]],                     \
      device T* probs [[buffer(2)]], device const T* q [[buffer(3)]],                   \
      device const T* k [[buffer(4)]], device const T* v [[buffer(5)]],                 \
      device const uchar* mask [[buffer(6)]], constant SdpaParams& p [[buffer(7)]],     \
      uint3 group [[threadgroup_position_in_grid]],                                     \
      uint lane [[thread_index_in_simdgroup]],                                          \
      uint row [[simdgroup_index_in_threadgroup]]);

AOTISHIM_SDPA("aotishim_sdpa_float32", float)
AOTISHIM_SDPA("aotishim_sdpa_float16", half)
AOTISHIM_SDPA("aotishim_sdpa_bfloat16", bf16_t)
