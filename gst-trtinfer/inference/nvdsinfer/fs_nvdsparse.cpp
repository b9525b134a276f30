// SPDX-License-Identifier: MIT OR Apache-2.0
// Ferrostream's shim around nvinfer custom parsers: see fs_nvdsparse.h.

#include "fs_nvdsparse.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <type_traits>

#include "nvdsinfer_custom_impl.h"

namespace {

void copy_text(const char *text, char *out, size_t len) {
    if (out == nullptr || len == 0) {
        return;
    }
    std::strncpy(out, text, len - 1);
    out[len - 1] = '\0';
}

std::vector<NvDsInferLayerInfo> layer_list(const NvDsInferLayerInfo *layers, size_t count) {
    return std::vector<NvDsInferLayerInfo>(layers, layers + count);
}

void fill_params(const FsDetectionParams *in, NvDsInferParseDetectionParams &out) {
    out.numClassesConfigured = in->num_classes;
    out.perClassPreclusterThreshold.assign(in->pre_cluster_thresholds,
                                           in->pre_cluster_thresholds + in->num_classes);
    out.perClassPostclusterThreshold.assign(in->post_cluster_thresholds,
                                            in->post_cluster_thresholds + in->num_classes);
}

// Runs `call`, turning an exception into FS_PARSE_THREW with its message.
template <typename Call>
int guarded(Call call, char *error, size_t error_len) {
    try {
        return call() ? FS_PARSE_OK : FS_PARSE_FALSE;
    } catch (const std::exception &e) {
        copy_text(e.what(), error, error_len);
    } catch (...) {
        copy_text("an exception that is not a std::exception", error, error_len);
    }
    return FS_PARSE_THREW;
}

// The two layouts of NvDsInferObjectDetectionInfo a parser library may have been built with,
// pinned here rather than derived from the header this file is compiled against (DeepStream 9's
// nvdsinfer.h has the 28-byte one, Ferrostream's and DeepStream 6-8's the 24-byte one). The
// DeepStream 9 layout is FsObjectInfo itself, what Rust receives.
struct ObjectInfoDs8 {
    unsigned int classId;
    float left;
    float top;
    float width;
    float height;
    float detectionConfidence;
};
using ObjectInfoDs9 = FsObjectInfo;
static_assert(sizeof(ObjectInfoDs8) == 24, "DeepStream 6-8's NvDsInferObjectDetectionInfo");
static_assert(sizeof(ObjectInfoDs9) == 28, "DeepStream 9's NvDsInferObjectDetectionInfo");
static_assert(offsetof(ObjectInfoDs9, rotation_angle) == 24, "DeepStream 9's rotation_angle");
// Whichever headers this is compiled against, their structure is one of the two.
static_assert(sizeof(NvDsInferObjectDetectionInfo) == sizeof(ObjectInfoDs8) ||
                  sizeof(NvDsInferObjectDetectionInfo) == sizeof(ObjectInfoDs9),
              "NvDsInferObjectDetectionInfo is DeepStream 8's or DeepStream 9's");
static_assert(offsetof(NvDsInferObjectDetectionInfo, classId) == offsetof(ObjectInfoDs8, classId) &&
                  offsetof(NvDsInferObjectDetectionInfo, left) == offsetof(ObjectInfoDs8, left) &&
                  offsetof(NvDsInferObjectDetectionInfo, top) == offsetof(ObjectInfoDs8, top) &&
                  offsetof(NvDsInferObjectDetectionInfo, width) == offsetof(ObjectInfoDs8, width) &&
                  offsetof(NvDsInferObjectDetectionInfo, height) == offsetof(ObjectInfoDs8, height) &&
                  offsetof(NvDsInferObjectDetectionInfo, detectionConfidence) ==
                      offsetof(ObjectInfoDs8, detectionConfidence),
              "NvDsInferObjectDetectionInfo begins with DeepStream 8's fields");

// What goes to Rust: a DeepStream 6-8 object gets angle 0; a DeepStream 9 one goes as it is.
FsObjectInfo plain(const ObjectInfoDs8 &o) {
    return FsObjectInfo{o.classId, o.left, o.top, o.width, o.height, o.detectionConfidence, 0.0f};
}
const FsObjectInfo &plain(const ObjectInfoDs9 &o) { return o; }

// Calls a bounding-box parser whose object list holds `Object`s (the layout of the DeepStream
// headers the library was built against).
template <typename Object>
int parse_bbox(void *func, const NvDsInferLayerInfo *layers, size_t num_layers,
               const NvDsInferNetworkInfo *network, const FsDetectionParams *params,
               FsEmitObject emit, void *ctx, char *error, size_t error_len) {
    using Parse = bool (*)(std::vector<NvDsInferLayerInfo> const &, NvDsInferNetworkInfo const &,
                           NvDsInferParseDetectionParams const &, std::vector<Object> &);
    return guarded(
        [&] {
            auto parse = reinterpret_cast<Parse>(func);
            NvDsInferParseDetectionParams detection;
            fill_params(params, detection);
            std::vector<Object> objects;
            bool ok = parse(layer_list(layers, num_layers), *network, detection, objects);
            for (const auto &object : objects) {
                const FsObjectInfo &out = plain(object);
                emit(ctx, &out);
            }
            return ok;
        },
        error, error_len);
}

}  // namespace

extern "C" int fs_nvds_parse_bbox(void *func, const NvDsInferLayerInfo *layers,
                                  size_t num_layers, const NvDsInferNetworkInfo *network,
                                  const FsDetectionParams *params, FsEmitObject emit, void *ctx,
                                  char *error, size_t error_len) {
    static_assert(std::is_same<NvDsInferParseCustomFunc,
                               bool (*)(std::vector<NvDsInferLayerInfo> const &,
                                        NvDsInferNetworkInfo const &,
                                        NvDsInferParseDetectionParams const &,
                                        std::vector<NvDsInferObjectDetectionInfo> &)>::value,
                  "the parser signature of nvdsinfer_custom_impl.h");
    return parse_bbox<ObjectInfoDs8>(func, layers, num_layers, network, params,
                                                    emit, ctx, error, error_len);
}

extern "C" int fs_nvds_parse_bbox_ds9(void *func, const NvDsInferLayerInfo *layers,
                                      size_t num_layers, const NvDsInferNetworkInfo *network,
                                      const FsDetectionParams *params, FsEmitObject emit,
                                      void *ctx, char *error, size_t error_len) {
    return parse_bbox<ObjectInfoDs9>(func, layers, num_layers, network, params, emit, ctx, error,
                                     error_len);
}

extern "C" int fs_nvds_parse_instance_mask(void *func, const NvDsInferLayerInfo *layers,
                                           size_t num_layers, const NvDsInferNetworkInfo *network,
                                           const FsDetectionParams *params, FsEmitMaskObject emit,
                                           void *ctx, char *error, size_t error_len) {
    std::vector<NvDsInferInstanceMaskInfo> objects;
    int result = guarded(
        [&] {
            auto parse = reinterpret_cast<NvDsInferInstanceMaskParseCustomFunc>(func);
            NvDsInferParseDetectionParams detection;
            fill_params(params, detection);
            bool ok = parse(layer_list(layers, num_layers), *network, detection, objects);
            for (const auto &object : objects) {
                emit(ctx, &object);
            }
            return ok;
        },
        error, error_len);
    // The parser allocated the masks with new[]; they are released whatever it returned.
    for (auto &object : objects) {
        delete[] object.mask;
        object.mask = nullptr;
    }
    return result;
}

extern "C" int fs_nvds_parse_classifier(void *func, const NvDsInferLayerInfo *layers,
                                        size_t num_layers, const NvDsInferNetworkInfo *network,
                                        float threshold, FsEmitAttribute emit, void *ctx,
                                        char *description, size_t description_len, char *error,
                                        size_t error_len) {
    std::vector<NvDsInferAttribute> attributes;
    std::string text;
    int result = guarded(
        [&] {
            auto parse = reinterpret_cast<NvDsInferClassiferParseCustomFunc>(func);
            bool ok = parse(layer_list(layers, num_layers), *network, threshold, attributes, text);
            for (const auto &attribute : attributes) {
                emit(ctx, &attribute);
            }
            return ok;
        },
        error, error_len);
    copy_text(text.c_str(), description, description_len);
    // The parser allocated the labels with malloc (strdup); they are released whatever it
    // returned.
    for (auto &attribute : attributes) {
        std::free(attribute.attributeLabel);
        attribute.attributeLabel = nullptr;
    }
    return result;
}

extern "C" int fs_nvds_parse_segmentation(void *func, const NvDsInferLayerInfo *layers,
                                          size_t num_layers, const NvDsInferNetworkInfo *network,
                                          float threshold, unsigned int num_classes,
                                          int *class_map, char *error, size_t error_len) {
    return guarded(
        [&] {
            auto parse = reinterpret_cast<NvDsInferSemSegmentationParseCustomFunc>(func);
            float *probabilities = nullptr;
            return parse(layer_list(layers, num_layers), *network, threshold, num_classes,
                         class_map, probabilities);
        },
        error, error_len);
}

extern "C" size_t fs_nvds_sizeof_layer_info(void) { return sizeof(NvDsInferLayerInfo); }

extern "C" size_t fs_nvds_sizeof_object_ds9(void) { return sizeof(ObjectInfoDs9); }

extern "C" size_t fs_nvds_offsetof_rotation_angle_ds9(void) {
    return offsetof(ObjectInfoDs9, rotation_angle);
}

extern "C" size_t fs_nvds_sizeof_detection_params(void) {
    return sizeof(NvDsInferParseDetectionParams);
}
