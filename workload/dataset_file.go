package workload

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
)

// A stage's dataset.jsonl is never held in memory: the build hashes its lines as it draws them, and
// WriteDataset draws them again into the file (bench/README.md's memory passes: for a pool of 50-turn chats the file was 51
// KiB a session, held until the stage began).

// datasetHash takes a pool's dataset lines as they are made and keeps only their sha256 and length.
type datasetHash struct {
	sum hash.Hash
	n   countingWriter
	enc *json.Encoder
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func newDatasetHash() *datasetHash {
	d := &datasetHash{sum: sha256.New()}
	d.n.w = d.sum
	d.enc = newDatasetEncoder(&d.n)
	return d
}

func (d *datasetHash) add(sp SessionPlan, personas []Persona) {
	_ = d.enc.Encode(datasetLine(sp, personas))
}

func newDatasetEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// finish sets the pool's dataset identity and turns its prompt sums into means.
// The sha256 covers dataset.jsonl and then one line naming the sessions past the pool
// (SessionReuse.ruleLine), which the file does not hold; DatasetSize is the file's alone.
func (p *StagePool) finish(d *datasetHash) {
	p.DatasetSize = d.n.n
	_, _ = io.WriteString(d.sum, p.Reuse.ruleLine())
	p.SHA256 = hex.EncodeToString(d.sum.Sum(nil))
	if n := float64(len(p.Sessions)); n > 0 {
		p.PromptFirst, p.PromptMid, p.PromptLast = p.PromptFirst/n, p.PromptMid/n, p.PromptLast/n
	}
}

// addPrompts adds the prompt lengths of sp's first, middle and last turn to the pool's sums.
func (p *StagePool) addPrompts(sp SessionPlan) {
	if len(sp.Turns) == 0 {
		return
	}
	prompt := 0.0
	if sp.Persona >= 0 {
		prompt = float64(p.personas[sp.Persona].Tokens)
	}
	at := make([]float64, len(sp.Turns))
	for k, t := range sp.Turns {
		prompt += float64(t.UserTokens)
		at[k] = prompt
		prompt += float64(t.MaxOutputTokens)
	}
	p.PromptFirst += at[0]
	p.PromptMid += at[(len(at)-1)/2]
	p.PromptLast += at[len(at)-1]
}

// WriteDataset writes dataset.jsonl: for a synthetic pool every session drawn again, text included
// (the bytes whose sha256 is SHA256).
func (p *StagePool) WriteDataset(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := newDatasetEncoder(bw)
	var g *TextGen
	if p.draw != nil {
		g, _ = p.text.gens.Get().(*TextGen)
		if g == nil {
			return errors.New("writing the dataset: no text generator for the pool's language")
		}
		defer p.text.gens.Put(g)
	}
	for i := range p.Sessions {
		sp := p.Sessions[i]
		if p.draw != nil {
			sp = p.draw(g, i)
		}
		if err := enc.Encode(datasetLine(sp, p.personas)); err != nil {
			return err
		}
	}
	return bw.Flush()
}
