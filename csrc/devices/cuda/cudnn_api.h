// The few cuDNN (9.x, legacy convolution API) entry points and enum values
// aotishim uses, declared here from NVIDIA's documented API so the cuda
// backend builds without cuDNN installed; libcudnn is loaded at the first
// convolution.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace aotishim {
namespace cuda {
namespace cudnn {

using Handle = struct cudnnContext*;
using TensorDesc = struct cudnnTensorStruct*;
using FilterDesc = struct cudnnFilterStruct*;
using ConvDesc = struct cudnnConvolutionStruct*;
using Status = int;  // cudnnStatus_t

constexpr Status kStatusSuccess = 0;

// cudnnDataType_t
constexpr int kDataFloat = 0;
constexpr int kDataDouble = 1;
constexpr int kDataHalf = 2;
constexpr int kDataBFloat16 = 9;

// cudnnTensorFormat_t
constexpr int kFormatNCHW = 0;
constexpr int kFormatNHWC = 1;

// cudnnConvolutionMode_t: torch's convolution is a cross-correlation.
constexpr int kCrossCorrelation = 1;

// cudnnMathType_t
constexpr int kTensorOpMath = 1;  // CUDNN_TENSOR_OP_MATH
constexpr int kFmaMath = 3;       // CUDNN_FMA_MATH: no tensor cores, so no TF32 rounding

// cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t share
// this layout.
struct AlgoPerf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Api {
  size_t (*get_version)();
  const char* (*error_string)(Status);
  Status (*create)(Handle*);
  Status (*destroy)(Handle);
  Status (*set_stream)(Handle, cudaStream_t);
  Status (*create_tensor_desc)(TensorDesc*);
  Status (*destroy_tensor_desc)(TensorDesc);
  Status (*set_tensor_nd)(TensorDesc, int data_type, int nb_dims, const int* dims,
                          const int* strides);
  Status (*create_filter_desc)(FilterDesc*);
  Status (*destroy_filter_desc)(FilterDesc);
  Status (*set_filter_nd)(FilterDesc, int data_type, int format, int nb_dims, const int* dims);
  Status (*create_conv_desc)(ConvDesc*);
  Status (*destroy_conv_desc)(ConvDesc);
  Status (*set_conv_nd)(ConvDesc, int array_length, const int* pads, const int* strides,
                        const int* dilations, int mode, int compute_type);
  Status (*set_conv_group_count)(ConvDesc, int groups);
  Status (*set_conv_math_type)(ConvDesc, int math_type);
  Status (*get_fwd_algos)(Handle, TensorDesc x, FilterDesc w, ConvDesc, TensorDesc y,
                          int requested, int* returned, AlgoPerf* results);
  // Times every algorithm (synchronously) and returns them fastest first.
  Status (*find_fwd_algos)(Handle, TensorDesc x, FilterDesc w, ConvDesc, TensorDesc y,
                           int requested, int* returned, AlgoPerf* results);
  Status (*fwd_workspace_size)(Handle, TensorDesc x, FilterDesc w, ConvDesc, TensorDesc y,
                               int algo, size_t* bytes);
  Status (*forward)(Handle, const void* alpha, TensorDesc x_desc, const void* x,
                    FilterDesc w_desc, const void* w, ConvDesc, int algo, void* workspace,
                    size_t workspace_bytes, const void* beta, TensorDesc y_desc, void* y);
  Status (*get_bwd_data_algos)(Handle, FilterDesc w, TensorDesc dy, ConvDesc, TensorDesc dx,
                               int requested, int* returned, AlgoPerf* results);
  Status (*find_bwd_data_algos)(Handle, FilterDesc w, TensorDesc dy, ConvDesc, TensorDesc dx,
                                int requested, int* returned, AlgoPerf* results);
  Status (*bwd_data_workspace_size)(Handle, FilterDesc w, TensorDesc dy, ConvDesc,
                                    TensorDesc dx, int algo, size_t* bytes);
  Status (*backward_data)(Handle, const void* alpha, FilterDesc w_desc, const void* w,
                          TensorDesc dy_desc, const void* dy, ConvDesc, int algo,
                          void* workspace, size_t workspace_bytes, const void* beta,
                          TensorDesc dx_desc, void* dx);
  Status (*add_tensor)(Handle, const void* alpha, TensorDesc a_desc, const void* a,
                       const void* beta, TensorDesc c_desc, void* c);
};

// Loads libcudnn on first use (thread-safe) and returns its entry points.
// Throws a clear error naming every place it looked when none loads.
const Api& api();

// The places api() tries, in order (for messages and tests).
std::string search_description();

// "CUDNN_STATUS_..." text for a status, for error messages.
std::string status_text(Status status);

}  // namespace cudnn
}  // namespace cuda
}  // namespace aotishim
