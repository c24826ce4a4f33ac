"""ONNX Runtime's Objective-C API as Swift sees it: the only ORT symbols generated Swift may use.

Facts, taken from the headers of the exact package the generated code pins:
``microsoft/onnxruntime-swift-package-manager`` tag 1.24.2 (commit b7fb7f7d, "Update ORT to 1.24.2"),
``objectivec/include/*.h`` (a copy of ``microsoft/onnxruntime`` ``objectivec/include``). Swift names
are the Clang importer's renaming of each selector (drop ``error:`` → ``throws``; split the first
selector piece at its last preposition into base name + first label; drop a trailing type-name word that
repeats the parameter type, e.g. ``…WithOptions:(ORTCoreMLExecutionProviderOptions*)`` → ``(with:)``;
``NS_SWIFT_NAME`` wins). Cross-checked against the package's own Swift test
(``swift/OnnxRuntimeBindingsTests/SwiftOnnxRuntimeBindingsTests.swift``: ``ORTEnv(loggingLevel:)``,
``ORTSessionOptions()``, ``setLogSeverityLevel(_:)``, ``setIntraOpNumThreads(_:)``,
``ORTSession(env:modelPath:sessionOptions:)``, ``appendCoreMLExecutionProvider(with:)``,
``appendXnnpackExecutionProvider(with:)``, ``ORTIsCoreMLExecutionProviderAvailable()``, ``ORTVersion()``)
and against public Swift code using ``ORTValue(tensorData:elementType:shape:)`` with ``.uInt8``.

Each entry: Swift spelling → (header, Objective-C declaration it comes from).
"""

from __future__ import annotations

SOURCE = "microsoft/onnxruntime-swift-package-manager@1.24.2 (b7fb7f7d) objectivec/include/*.h"

# Classes, protocols-free: every @interface in the public headers (training headers excluded: the SPM
# target excludes ort_checkpoint.h / ort_training_session.h / onnxruntime_training.h).
CLASSES: dict[str, tuple[str, str]] = {
    "ORTEnv": ("ort_env.h", "@interface ORTEnv : NSObject"),
    "ORTSession": ("ort_session.h", "@interface ORTSession : NSObject"),
    "ORTSessionOptions": ("ort_session.h", "@interface ORTSessionOptions : NSObject"),
    "ORTRunOptions": ("ort_session.h", "@interface ORTRunOptions : NSObject"),
    "ORTValue": ("ort_value.h", "@interface ORTValue : NSObject"),
    "ORTValueTypeInfo": ("ort_value.h", "@interface ORTValueTypeInfo : NSObject"),
    "ORTTensorTypeAndShapeInfo": ("ort_value.h", "@interface ORTTensorTypeAndShapeInfo : NSObject"),
    "ORTCoreMLExecutionProviderOptions": (
        "ort_coreml_execution_provider.h",
        "@interface ORTCoreMLExecutionProviderOptions : NSObject",
    ),
    "ORTXnnpackExecutionProviderOptions": (
        "ort_xnnpack_execution_provider.h",
        "@interface ORTXnnpackExecutionProviderOptions : NSObject",
    ),
}

# NS_ENUM types → their cases as Swift imports them (common prefix removed, first word lower-cased:
# ORTTensorElementDataTypeUInt8 → .uInt8).
ENUMS: dict[str, tuple[str, frozenset[str]]] = {
    "ORTLoggingLevel": ("ort_enums.h", frozenset({"verbose", "info", "warning", "error", "fatal"})),
    "ORTValueType": ("ort_enums.h", frozenset({"unknown", "tensor"})),
    "ORTTensorElementDataType": (
        "ort_enums.h",
        frozenset({"undefined", "float", "int8", "uInt8", "int32", "uInt32", "int64", "uInt64", "string"}),
    ),
    "ORTGraphOptimizationLevel": ("ort_enums.h", frozenset({"none", "basic", "extended", "layout", "all"})),
}

# C functions.
FUNCTIONS: dict[str, tuple[str, str]] = {
    "ORTIsCoreMLExecutionProviderAvailable": (
        "ort_coreml_execution_provider.h",
        "BOOL ORTIsCoreMLExecutionProviderAvailable(void);",
    ),
    "ORTVersion": ("ort_env.h", "NSString* _Nullable ORTVersion(void);"),
}

# Initializers: class → {argument labels} (all of them throw in Swift: they take NSError**).
INITIALIZERS: dict[str, dict[tuple[str, ...], tuple[str, str]]] = {
    "ORTEnv": {("loggingLevel",): ("ort_env.h", "-initWithLoggingLevel:error:")},
    "ORTSessionOptions": {(): ("ort_session.h", "-initWithError: NS_SWIFT_NAME(init())")},
    "ORTRunOptions": {(): ("ort_session.h", "-initWithError: NS_SWIFT_NAME(init())")},
    "ORTSession": {
        ("env", "modelPath", "sessionOptions"): ("ort_session.h", "-initWithEnv:modelPath:sessionOptions:error:"),
    },
    "ORTValue": {
        ("tensorData", "elementType", "shape"): ("ort_value.h", "-initWithTensorData:elementType:shape:error:"),
        ("tensorStringData", "shape"): ("ort_value.h", "-initWithTensorStringData:shape:error:"),
    },
    "ORTCoreMLExecutionProviderOptions": {(): ("ort_coreml_execution_provider.h", "NSObject -init")},
    "ORTXnnpackExecutionProviderOptions": {(): ("ort_xnnpack_execution_provider.h", "NSObject -init")},
}

# Instance methods: Swift full name → (class, header, selector). All throwing unless noted.
METHODS: dict[str, tuple[str, str, str]] = {
    "run(withInputs:outputs:runOptions:)": ("ORTSession", "ort_session.h", "-runWithInputs:outputs:runOptions:error:"),
    "run(withInputs:outputNames:runOptions:)": (
        "ORTSession",
        "ort_session.h",
        "-runWithInputs:outputNames:runOptions:error: (outputNames: Set<String>) -> [String: ORTValue]",
    ),
    "inputNames()": ("ORTSession", "ort_session.h", "-inputNamesWithError:"),
    "overridableInitializerNames()": ("ORTSession", "ort_session.h", "-overridableInitializerNamesWithError:"),
    "outputNames()": ("ORTSession", "ort_session.h", "-outputNamesWithError:"),
    "appendExecutionProvider(_:providerOptions:)": (
        "ORTSessionOptions",
        "ort_session.h",
        "-appendExecutionProvider:providerOptions:error:",
    ),
    "setIntraOpNumThreads(_:)": ("ORTSessionOptions", "ort_session.h", "-setIntraOpNumThreads:error: (Int32)"),
    "setGraphOptimizationLevel(_:)": ("ORTSessionOptions", "ort_session.h", "-setGraphOptimizationLevel:error:"),
    "setOptimizedModelFilePath(_:)": ("ORTSessionOptions", "ort_session.h", "-setOptimizedModelFilePath:error:"),
    "setLogID(_:)": ("ORTSessionOptions", "ort_session.h", "-setLogID:error:"),
    "setLogSeverityLevel(_:)": ("ORTSessionOptions / ORTRunOptions", "ort_session.h", "-setLogSeverityLevel:error:"),
    "addConfigEntry(withKey:value:)": (
        "ORTSessionOptions / ORTRunOptions",
        "ort_session.h",
        "-addConfigEntryWithKey:value:error:",
    ),
    "enableOrtExtensionsCustomOps()": ("ORTSessionOptions", "ort_session.h", "-enableOrtExtensionsCustomOpsWithError:"),
    "setLogTag(_:)": ("ORTRunOptions", "ort_session.h", "-setLogTag:error:"),
    "appendCoreMLExecutionProvider(with:)": (
        "ORTSessionOptions",
        "ort_coreml_execution_provider.h",
        "-appendCoreMLExecutionProviderWithOptions:error:",
    ),
    "appendCoreMLExecutionProvider(withOptionsV2:)": (
        "ORTSessionOptions",
        "ort_coreml_execution_provider.h",
        "-appendCoreMLExecutionProviderWithOptionsV2:error: (NSDictionary; forwards to appendExecutionProvider:@\"CoreML\")",
    ),
    "appendXnnpackExecutionProvider(with:)": (
        "ORTSessionOptions",
        "ort_xnnpack_execution_provider.h",
        "-appendXnnpackExecutionProviderWithOptions:error:",
    ),
    "typeInfo()": ("ORTValue", "ort_value.h", "-typeInfoWithError:"),
    "tensorTypeAndShapeInfo()": ("ORTValue", "ort_value.h", "-tensorTypeAndShapeInfoWithError:"),
    "tensorData()": ("ORTValue", "ort_value.h", "-tensorDataWithError: -> NSMutableData (no copy)"),
    "tensorStringData()": ("ORTValue", "ort_value.h", "-tensorStringDataWithError: -> [String] (a copy)"),
}

# Properties (not checked by the scanner, listed for completeness).
PROPERTIES: dict[str, tuple[str, str]] = {
    "elementType": ("ORTTensorTypeAndShapeInfo", "@property ORTTensorElementDataType elementType"),
    "shape": ("ORTTensorTypeAndShapeInfo", "@property NSArray<NSNumber*>* shape"),
    "type": ("ORTValueTypeInfo", "@property ORTValueType type"),
    "tensorTypeAndShapeInfo": ("ORTValueTypeInfo", "@property ORTTensorTypeAndShapeInfo* tensorTypeAndShapeInfo"),
    "useCPUOnly": ("ORTCoreMLExecutionProviderOptions", "@property BOOL useCPUOnly"),
    "useCPUAndGPU": ("ORTCoreMLExecutionProviderOptions", "@property BOOL useCPUAndGPU"),
    "enableOnSubgraphs": ("ORTCoreMLExecutionProviderOptions", "@property BOOL enableOnSubgraphs"),
    "onlyEnableForDevicesWithANE": ("ORTCoreMLExecutionProviderOptions", "@property BOOL onlyEnableForDevicesWithANE"),
    "onlyAllowStaticInputShapes": ("ORTCoreMLExecutionProviderOptions", "@property BOOL onlyAllowStaticInputShapes"),
    "createMLProgram": ("ORTCoreMLExecutionProviderOptions", "@property BOOL createMLProgram"),
    "intra_op_num_threads": ("ORTXnnpackExecutionProviderOptions", "@property int intra_op_num_threads"),
}

# Every ORT-prefixed name Swift code may mention.
SYMBOLS: frozenset[str] = frozenset(CLASSES) | frozenset(ENUMS) | frozenset(FUNCTIONS)

# Base names of ORT methods: a call with one of these base names must match a full name above exactly.
METHOD_BASE_NAMES: frozenset[str] = frozenset(name.split("(", 1)[0] for name in METHODS)

# CoreML EP provider-option keys and values ONNX Runtime parses
# (onnxruntime/core/providers/coreml/coreml_options.cc, ValidateAndParseProviderOption; unknown keys
# throw "Unknown option"). ModelCacheDirectory: CoreML model cache, onnxruntime PR #23065 (1.21).
COREML_PROVIDER_OPTIONS: dict[str, frozenset[str] | None] = {
    "MLComputeUnits": frozenset({"CPUAndNeuralEngine", "CPUAndGPU", "CPUOnly", "ALL"}),
    "ModelFormat": frozenset({"MLProgram", "NeuralNetwork"}),
    "RequireStaticInputShapes": frozenset({"0", "1"}),
    "EnableOnSubgraphs": frozenset({"0", "1"}),
    "SpecializationStrategy": frozenset({"Default", "FastPrediction"}),
    "ProfileComputePlan": frozenset({"0", "1"}),
    "AllowLowPrecisionAccumulationOnGPU": frozenset({"0", "1"}),
    "ModelCacheDirectory": None,  # a path
}
