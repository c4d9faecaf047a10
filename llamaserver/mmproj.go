package llamaserver

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// A tiny multimodal projector for the tiny model: what llama-server's --mmproj loads through libmtmd
// to accept images. It is LLaVA's kind, the simplest mtmd knows: a CLIP vision encoder (patches cut by
// a convolution, position embeddings, pre-norm transformer blocks) and a two-layer MLP ("mlp") that
// maps each patch to one embedding of the text model. With random weights the model sees noise, but
// the server does everything a real one does with an image: decodes it, resizes it to the encoder's
// square, encodes it, counts its tokens in usage and keeps them in the prompt cache.

// ProjectorOptions shape the tiny projector.
type ProjectorOptions struct {
	// Seed picks the random weights (0 is a fixed default).
	Seed uint64
	// ImageSize is the side of the square every image is resized to (default 64).
	ImageSize int
	// PatchSize is the side of one patch (default 8); an image costs (ImageSize/PatchSize)² tokens.
	PatchSize int
}

// Architecture of the tiny vision encoder.
const (
	visionWidth  = 32
	visionLayers = 2 // mtmd runs all but the last, as LLaVA takes the second-to-last layer's output
	visionHeads  = 2
	visionFFN    = 64

	defaultImageSize = 64
	defaultPatchSize = 8
)

// withDefaults fills in the zero fields and checks the rest.
func (o ProjectorOptions) withDefaults() (ProjectorOptions, error) {
	if o.ImageSize == 0 {
		o.ImageSize = defaultImageSize
	}
	if o.PatchSize == 0 {
		o.PatchSize = defaultPatchSize
	}
	if o.ImageSize < 0 || o.PatchSize < 0 || o.ImageSize%o.PatchSize != 0 {
		return o, fmt.Errorf("projector options: image size %d and patch size %d: both must be positive and the patch must divide the image", o.ImageSize, o.PatchSize)
	}
	return o, nil
}

// ImageTokens is what one image costs in the prompt with this projector: one token a patch.
func (o ProjectorOptions) ImageTokens() int {
	o, err := o.withDefaults()
	if err != nil {
		return 0
	}
	n := o.ImageSize / o.PatchSize
	return n * n
}

// WriteTinyProjector writes the projector to out for a text model whose embeddings are textEmbd wide
// (the tiny model's are 64): mtmd refuses a projector whose output width is not the text model's.
func WriteTinyProjector(out string, textEmbd int, opt ProjectorOptions) error {
	opt, err := opt.withDefaults()
	if err != nil {
		return err
	}
	if textEmbd <= 0 {
		return fmt.Errorf("projector: text embedding width %d: must be positive", textEmbd)
	}
	meta := []kv{
		{"general.architecture", "clip"},
		{"general.name", "plload tiny llava projector"},
		{"clip.has_vision_encoder", true},
		{"clip.projector_type", "mlp"},
		{"clip.vision.image_size", uint32(opt.ImageSize)},
		{"clip.vision.patch_size", uint32(opt.PatchSize)},
		{"clip.vision.embedding_length", uint32(visionWidth)},
		{"clip.vision.feed_forward_length", uint32(visionFFN)},
		{"clip.vision.block_count", uint32(visionLayers)},
		{"clip.vision.attention.head_count", uint32(visionHeads)},
		{"clip.vision.attention.layer_norm_epsilon", float32(1e-5)},
		{"clip.vision.projection_dim", uint32(textEmbd)},
		// CLIP's normalization: mtmd reads the three means and deviations, one a colour.
		{"clip.vision.image_mean", []float32{0.48145466, 0.4578275, 0.40821073}},
		{"clip.vision.image_std", []float32{0.26862954, 0.26130258, 0.27577711}},
		{"clip.use_gelu", true},
	}
	return writeGGUFFile(out, meta, projectorWeights(opt, uint64(textEmbd)))
}

// projectorWeights are the encoder's and the MLP's tensors, named as clip.cpp looks them up: small
// random matrices, norms of one, biases of zero. Dims are ggml's: a matrix from n inputs to m
// outputs is {n, m}.
func projectorWeights(opt ProjectorOptions, textEmbd uint64) []tensor {
	r := rand.New(rand.NewPCG(opt.Seed, 0x6d6d70726f6a))
	filled := func(name string, v func() float32, dims ...uint64) tensor {
		n := uint64(1)
		for _, d := range dims {
			n *= d
		}
		t := tensor{name: name, dims: dims, data: make([]float32, n)}
		for i := range t.data {
			t.data[i] = v()
		}
		return t
	}
	random := func(name string, dims ...uint64) tensor {
		return filled(name, func() float32 { return float32(r.NormFloat64() * 0.02) }, dims...)
	}
	ones := func(name string, n uint64) tensor { return filled(name, func() float32 { return 1 }, n) }
	zeros := func(name string, n uint64) tensor { return filled(name, func() float32 { return 0 }, n) }

	const e = visionWidth
	side := uint64(opt.ImageSize / opt.PatchSize)
	patch := uint64(opt.PatchSize)
	out := []tensor{
		// The patch cut is a convolution: a kernel of patch×patch×3 for each of the e outputs.
		random("v.patch_embd.weight", patch, patch, 3, e),
		zeros("v.patch_embd.bias", e),
		random("v.position_embd.weight", e, side*side),
		ones("v.pre_ln.weight", e),
		zeros("v.pre_ln.bias", e),
	}
	for l := range visionLayers {
		p := fmt.Sprintf("v.blk.%d.", l)
		out = append(out,
			ones(p+"ln1.weight", e), zeros(p+"ln1.bias", e),
			random(p+"attn_q.weight", e, e), zeros(p+"attn_q.bias", e),
			random(p+"attn_k.weight", e, e), zeros(p+"attn_k.bias", e),
			random(p+"attn_v.weight", e, e), zeros(p+"attn_v.bias", e),
			random(p+"attn_out.weight", e, e), zeros(p+"attn_out.bias", e),
			ones(p+"ln2.weight", e), zeros(p+"ln2.bias", e),
			random(p+"ffn_up.weight", e, visionFFN), zeros(p+"ffn_up.bias", visionFFN),
			random(p+"ffn_down.weight", visionFFN, e), zeros(p+"ffn_down.bias", e),
		)
	}
	// LLaVA's projector: linear, GELU, linear, into the text model's width.
	return append(out,
		random("mm.0.weight", e, textEmbd), zeros("mm.0.bias", textEmbd),
		random("mm.2.weight", textEmbd, textEmbd), zeros("mm.2.bias", textEmbd),
	)
}

// projectorPaths writes each kind of tiny projector once per process, beside the tiny models.
var projectorPaths = map[ProjectorOptions]string{}

// projectorVersion changes whenever the projector's bytes would.
const projectorVersion = 1

// TinyProjector is the path of the tiny projector for opt, fitted to the tiny model's width, written
// on first use into dir (the models directory beside Root() when empty).
func TinyProjector(dir string, opt ProjectorOptions) (string, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return "", err
	}
	modelMu.Lock()
	defer modelMu.Unlock()
	if p, ok := projectorPaths[opt]; ok {
		return p, nil
	}
	if dir == "" {
		dir = filepath.Join(filepath.Dir(Root()), "models")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, fmt.Sprintf("tiny-mmproj-v%d-seed%d-%dpx-%dpatch.gguf", projectorVersion, opt.Seed, opt.ImageSize, opt.PatchSize))
	if _, err := os.Stat(p); err != nil {
		if err := WriteTinyProjector(p, width, opt); err != nil {
			return "", err
		}
	}
	projectorPaths[opt] = p
	return p, nil
}
