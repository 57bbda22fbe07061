// The few cuDNN 9 entry points and enum values aotishim uses (the backend,
// or graph, API that runs convolutions, and the legacy convolution API it
// falls back on), declared here from NVIDIA's documented API so the cuda
// backend builds without cuDNN installed; libcudnn is loaded at the first
// convolution.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
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

// ---- the backend (graph) API: cudnn_graph.h
using BackendDesc = void*;  // cudnnBackendDescriptor_t

// cudnnBackendDescriptorType_t
constexpr int kConvolutionDescriptor = 1;
constexpr int kEngineDescriptor = 2;
constexpr int kEngineCfgDescriptor = 3;
constexpr int kEngineHeurDescriptor = 4;
constexpr int kExecutionPlanDescriptor = 5;
constexpr int kConvForwardOpDescriptor = 10;
constexpr int kConvBackwardDataOpDescriptor = 12;
constexpr int kOperationGraphDescriptor = 15;
constexpr int kVariantPackDescriptor = 16;
constexpr int kTensorDescriptor = 17;

// cudnnBackendAttributeType_t
constexpr int kTypeHandle = 0;
constexpr int kTypeDataType = 1;
constexpr int kTypeInt64 = 3;
constexpr int kTypeFloat = 4;
constexpr int kTypeDouble = 5;
constexpr int kTypeVoidPtr = 6;
constexpr int kTypeConvolutionMode = 7;
constexpr int kTypeHeurMode = 8;
constexpr int kTypeNumericalNote = 11;
constexpr int kTypeBackendDescriptor = 15;
constexpr int kTypeBehaviorNote = 19;

// cudnnBackendAttributeName_t
constexpr int kAttrConvCompType = 100;
constexpr int kAttrConvMode = 101;
constexpr int kAttrConvDilations = 102;
constexpr int kAttrConvFilterStrides = 103;
constexpr int kAttrConvPostPaddings = 104;
constexpr int kAttrConvPrePaddings = 105;
constexpr int kAttrConvSpatialDims = 106;
constexpr int kAttrEngineHeurMode = 200;
constexpr int kAttrEngineHeurOperationGraph = 201;
constexpr int kAttrEngineHeurResults = 202;
constexpr int kAttrEngineCfgEngine = 300;
constexpr int kAttrExecutionPlanHandle = 400;
constexpr int kAttrExecutionPlanEngineConfig = 401;
constexpr int kAttrExecutionPlanWorkspaceSize = 402;
constexpr int kAttrConvForwardAlpha = 700;  // ..._BWD_DATA_* are these + 6
constexpr int kAttrConvForwardBeta = 701;
constexpr int kAttrConvForwardConvDesc = 702;
constexpr int kAttrConvForwardW = 703;
constexpr int kAttrConvForwardX = 704;  // BWD_DATA: DX
constexpr int kAttrConvForwardY = 705;  // BWD_DATA: DY
constexpr int kAttrConvBwdDataOffset = 6;
constexpr int kAttrOperationGraphHandle = 800;
constexpr int kAttrOperationGraphOps = 801;
constexpr int kAttrTensorByteAlignment = 900;
constexpr int kAttrTensorDataType = 901;
constexpr int kAttrTensorDimensions = 902;
constexpr int kAttrTensorStrides = 903;
constexpr int kAttrTensorUniqueId = 906;
constexpr int kAttrVariantPackUniqueIds = 1000;
constexpr int kAttrVariantPackDataPointers = 1001;
constexpr int kAttrVariantPackWorkspace = 1003;
constexpr int kAttrEngineNumericalNote = 1303;
constexpr int kAttrEngineBehaviorNote = 1305;

// cudnnBackendHeurMode_t
constexpr int kHeurModeA = 3;
constexpr int kHeurModeFallback = 2;

// cudnnBackendNumericalNote_t
constexpr int kNoteTensorCore = 0;        // for float32: TF32 arithmetic
constexpr int kNoteDownConvertInputs = 1;
// cudnnBackendBehaviorNote_t
constexpr int kNoteRuntimeCompilation = 0;

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

  // The backend API.
  Status (*backend_create)(int type, BackendDesc* desc);
  Status (*backend_destroy)(BackendDesc desc);
  Status (*backend_finalize)(BackendDesc desc);
  Status (*backend_set)(BackendDesc desc, int name, int type, int64_t count, const void* values);
  Status (*backend_get)(BackendDesc desc, int name, int type, int64_t requested, int64_t* count,
                        void* values);
  Status (*backend_execute)(Handle, BackendDesc plan, BackendDesc variant_pack);
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
