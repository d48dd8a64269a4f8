package layout

// DecodeGenerationFast lets the external tests (over a real demo store)
// see whether the one-pass decoder took a manifest.
var DecodeGenerationFast = decodeGenerationFast
