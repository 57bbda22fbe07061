// Convolution (MSL): one thread per output element, forward or transposed,
// groups, stride/padding/dilation, 1-3 spatial dims, float accumulation.
// Uses bf16_t, load_value and store_value from copy_gemm.metal.
// out[n, co, o] = bias[co] + sum over the group's input channels ci and the
// taps k of input[n, ci, i] * weight, where forward i = o * stride - pad +
// k * dil, and transposed i * stride = o + pad - k * dil (taps that land
// between input positions contribute nothing).
template <typename T>
[[kernel]] void aotishim_conv(device T* out [[buffer(0)]],
                              device const T* in [[buffer(1)]],
                              device const T* w [[buffer(2)]],
                              device const T* bias [[buffer(3)]],
                              constant ConvParams& p [[buffer(4)]],
                              uint3 gid [[thread_position_in_grid]]) {
  const long plane = p.out_size[1] * p.out_size[2];
  const long pos = long(gid.x);
  const long co = long(gid.y);
  const long n = long(gid.z);
  if (pos >= p.out_size[0] * plane || co >= p.cout || n >= p.n) return;
  const long o0 = pos / plane;
  const long o1 = (pos / p.out_size[2]) % p.out_size[1];
  const long o2 = pos % p.out_size[2];
  const long cin_g = p.cin / p.groups;
  const long cout_g = p.cout / p.groups;
  const long g = co / cout_g;
  float acc = p.has_bias != 0 ? load_value(bias + co * p.bias_stride) : 0.0f;
  device const T* in_n = in + n * p.in_strides[0];
  for (long ci = 0; ci < cin_g; ++ci) {
    const long c = g * cin_g + ci;
    device const T* in_c = in_n + c * p.in_strides[1];
    device const T* w_c = p.transposed != 0
                              ? w + c * p.w_strides[0] + (co - g * cout_g) * p.w_strides[1]
                              : w + co * p.w_strides[0] + ci * p.w_strides[1];
    for (long k0 = 0; k0 < p.k_size[0]; ++k0) {
      long i0;
      if (p.transposed != 0) {
        const long t = o0 + p.pad[0] - k0 * p.dil[0];
        if (t < 0 || t % p.stride[0] != 0) continue;
        i0 = t / p.stride[0];
      } else {
        i0 = o0 * p.stride[0] - p.pad[0] + k0 * p.dil[0];
      }
      if (i0 < 0 || i0 >= p.in_size[0]) continue;
      for (long k1 = 0; k1 < p.k_size[1]; ++k1) {
        long i1;
        if (p.transposed != 0) {
          const long t = o1 + p.pad[1] - k1 * p.dil[1];
          if (t < 0 || t % p.stride[1] != 0) continue;
          i1 = t / p.stride[1];
        } else {
          i1 = o1 * p.stride[1] - p.pad[1] + k1 * p.dil[1];
        }
        if (i1 < 0 || i1 >= p.in_size[1]) continue;
        for (long k2 = 0; k2 < p.k_size[2]; ++k2) {
          long i2;
          if (p.transposed != 0) {
            const long t = o2 + p.pad[2] - k2 * p.dil[2];
            if (t < 0 || t % p.stride[2] != 0) continue;
            i2 = t / p.stride[2];
          } else {
            i2 = o2 * p.stride[2] - p.pad[2] + k2 * p.dil[2];
          }
          if (i2 < 0 || i2 >= p.in_size[2]) continue;
          acc += load_value(in_c + i0 * p.in_strides[2] + i1 * p.in_strides[3] +
                            i2 * p.in_strides[4]) *
                 load_value(w_c + k0 * p.w_strides[2] + k1 * p.w_strides[3] +
                            k2 * p.w_strides[4]);
        }
      }
    }
  }
  store_value(out + n * p.out_strides[0] + co * p.out_strides[1] + o0 * p.out_strides[2] +
                  o1 * p.out_strides[3] + o2 * p.out_strides[4],
              acc);
}

#define AOTISHIM_CONV(NAME, T)                                                   \
  template [[host_name(NAME)]] [[kernel]] void aotishim_conv<T>(                  \
      device T* out [[buffer(0)]], device const T* in [[buffer(1)]],             \
      device const T* w [[buffer(2)]], device const T* bias [[buffer(3)]],       \
      constant ConvParams& p [[buffer(4)]], uint3 gid [[thread_position_in_grid]]);

AOTISHIM_CONV("aotishim_conv_float32", float)
AOTISHIM_CONV("aotishim_conv_float16", half)
AOTISHIM_CONV("aotishim_conv_bfloat16", bf16_t)
