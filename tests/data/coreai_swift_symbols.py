"""Apple's Core AI Swift API as the generated Swift may use it: the only Core AI symbols it may name.

Facts, each from Apple's own material (read through the search tool, 2026-11-28):

* SKILL — ``apple/coreai-models`` ``skills/skills/working-with-coreai/SKILL.md`` ("Run (Swift)")::

      let model = try await AIModel(contentsOf: modelURL)
      guard let fn = try model.loadFunction(named: "main") else { return }
      var input = NDArray(shape: [1, 3, 224, 224], scalarType: .float32)
      var view = input.mutableView(as: Float32.self)
      var outputs = try await fn.run(inputs: ["image": input])
      let result = outputs.remove("logits")?.ndArray

* SEG — ``apple/coreai-models`` ``swift/Sources/CoreAIImageSegmenter/ImageSegmentationEngine.swift``:
  ``model.functionDescriptor(for: "main")`` (optional ``InferenceFunctionDescriptor``),
  ``descriptor.inputDescriptor(of: name)`` matched with ``case .ndArray(let d)``, ``NDArray(descriptor: d)``,
  stored ``let function: InferenceFunction`` / ``let descriptor: InferenceFunctionDescriptor``,
  ``init(model: AIModel, …)``, ``d.scalarType == .float16`` then ``Float16`` writes (under
  ``#if !((os(macOS) || targetEnvironment(macCatalyst)) && arch(x86_64))``), ``state.function.run(inputs:)``,
  ``outputs.remove(name)?.ndArray``, ``masks.shape``.
* HELPERS — ``apple/coreai-models`` ``swift/Sources/CoreAIShared/Runtime/NDArray+Helpers.swift``:
  ``descriptor.resolvingDynamicDimensions(shape)``; ``array.mutableView(as: type)`` then
  ``view.withUnsafeMutablePointer { ptr, shape, strides in … }``; ``array.view(as: type).withUnsafePointer
  { ptr, shape, strides in … }``; ``shape`` and ``strides`` there are ``Span<Int>``; ``array.shape`` (``[Int]``,
  ``.reduce(1, *)``); ``switch array.scalarType { case .float16: … case .float32: … }``; strides may be padded
  ("stride-aware indexing to handle GPU-aligned padding"), so reads and writes walk the strides.
* DOCS — Apple's Core AI reference (developer.apple.com/documentation/coreai): ``NDArray.ScalarType.float32``
  ("A 32-bit floating-point type"), ``NDArrayDescriptor.scalarType``, ``InferenceValue.Descriptor.ndArray(_:)``;
  availability iOS / iPadOS / tvOS / visionOS / watchOS 27.0+.

Each entry: Swift spelling → where it is stated.
"""

from __future__ import annotations

SOURCE = "apple/coreai-models (SKILL.md, ImageSegmentationEngine.swift, NDArray+Helpers.swift); developer.apple.com/documentation/coreai"

MODULE = "CoreAI"

# Types the generated Swift may name.
TYPES: dict[str, str] = {
    "AIModel": "SKILL: AIModel(contentsOf:); SEG: init(model: AIModel, …)",
    "InferenceFunction": "SEG: let function: InferenceFunction",
    "InferenceFunctionDescriptor": "SEG: let descriptor: InferenceFunctionDescriptor",
    "NDArray": "SKILL: NDArray(shape:scalarType:); SEG: [String: NDArray]",
}

# Initializers: type → the argument-label lists it is called with ("_" = unlabeled).
INITIALIZERS: dict[str, dict[tuple[str, ...], str]] = {
    "AIModel": {("contentsOf",): "SKILL: try await AIModel(contentsOf: modelURL)"},
    # (SKILL's NDArray(shape:scalarType:) is not used: inputs are made from the function's own descriptor, so
    # they take its scalar type and its possibly padded strides)
    "NDArray": {("descriptor",): "SEG: NDArray(descriptor: imageDescriptor)"},
}

# Methods: full Swift name → (async, throws, source). Receivers: AIModel, InferenceFunction,
# InferenceFunctionDescriptor, NDArray, NDArrayDescriptor, their views, and the outputs of run(inputs:).
METHODS: dict[str, tuple[bool, bool, str]] = {
    "loadFunction(named:)": (False, True, "SKILL: guard let fn = try model.loadFunction(named: \"main\")"),
    "functionDescriptor(for:)": (False, False, "SEG: model.functionDescriptor(for: \"main\")"),
    "inputDescriptor(of:)": (False, False, "SEG: state.descriptor.inputDescriptor(of: state.imageInputName)"),
    "resolvingDynamicDimensions(_:)": (False, False, "HELPERS: descriptor.resolvingDynamicDimensions(shape)"),
    "run(inputs:)": (True, True, "SKILL: try await fn.run(inputs: [\"image\": input])"),
    "remove(_:)": (False, False, "SKILL: outputs.remove(\"logits\")?.ndArray"),
    "mutableView(as:)": (False, False, "SKILL: input.mutableView(as: Float32.self)"),
    "view(as:)": (False, False, "HELPERS: array.view(as: type)"),
    "withUnsafeMutablePointer(_:)": (False, False, "HELPERS: view.withUnsafeMutablePointer { ptr, shape, strides in … }"),
    "withUnsafePointer(_:)": (False, False, "HELPERS: array.view(as: type).withUnsafePointer { ptr, shape, strides in … }"),
}

# Properties read.
PROPERTIES: dict[str, str] = {
    "ndArray": "SKILL: outputs.remove(\"logits\")?.ndArray",
    "shape": "SEG: masks.shape; HELPERS: array.shape",
    "scalarType": "HELPERS: switch array.scalarType; DOCS: NDArrayDescriptor.scalarType",
}

# NDArray.ScalarType cases (only those Apple's material above names).
SCALAR_TYPES: dict[str, str] = {
    "float32": "DOCS: NDArray.ScalarType.float32; SKILL: scalarType: .float32",
    "float16": "HELPERS: case .float16; SEG: descriptor.scalarType == .float16",
}

# InferenceValue.Descriptor cases matched.
DESCRIPTOR_CASES: dict[str, str] = {"ndArray": "DOCS: InferenceValue.Descriptor.ndArray(_:); SEG: case .ndArray(let d)"}

# The availability every Core AI declaration needs (DOCS: 27.0 on every platform listed; SEG's package
# annotates its Core AI helpers @available(macOS 27.0, iOS 27.0, *)).
AVAILABILITY = ("iOS 27.0", "macOS 27.0")
