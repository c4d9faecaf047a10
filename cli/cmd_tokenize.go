package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/tokenizer"
	"github.com/plload/plload/workload"
)

// maxTokenizeLine bounds one line of --jsonl input (a long document is still one line).
const maxTokenizeLine = 64 << 20

func tokenizeCommand() *cli.Command {
	return &cli.Command{
		Name:      "tokenize",
		Usage:     "count (and list) the tokens of texts in a tokenizer, as plload counts every length",
		ArgsUsage: "[TEXT...]",
		Description: "Prints one line per TEXT: its token count, and with --ids the ids as a JSON list.\n" +
			"With --jsonl FILE (- for standard input) it reads one {\"text\": ...} per line and writes one\n" +
			"{\"n\": N, \"ids\": [...]} per line, in order. Ids are Hugging Face tokenizers' encode(text,\n" +
			"add_special_tokens=False): added tokens in the text are matched as tokens.\n\n" +
			"Examples:\n" +
			"  plload tokenize 'Hello, world'\n" +
			"  plload tokenize --tokenizer Qwen/Qwen3-8B --ids '안녕하세요'\n" +
			"  plload tokenize --tokenizer ./tokenizer.json --jsonl corpus.jsonl > ids.jsonl",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "tokenizer", Value: workload.DefaultTokenizerName, Usage: workload.TokenizerAccepted},
			&cli.BoolFlag{Name: "ids", Usage: "print each text's token ids after its count"},
			&cli.StringFlag{Name: "jsonl", Usage: "read {\"text\": ...} lines from FILE (- for standard input); write {\"n\", \"ids\"} lines"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			texts, file := cmd.Args().Slice(), cmd.String("jsonl")
			if (len(texts) == 0) == (file == "") {
				return badInput("tokenize takes TEXT arguments or --jsonl FILE, one of the two; see plload tokenize --help")
			}
			tok, err := tokenizer.Load(cmd.String("tokenizer"))
			if err != nil {
				return badInput("--tokenizer: %v", err)
			}
			out := bufio.NewWriter(cmd.Root().Writer)
			defer out.Flush()
			if file != "" {
				return tokenizeJSONL(tok, file, out)
			}
			for _, t := range texts {
				ids := tok.Encode(t)
				out.WriteString(strconv.Itoa(len(ids)))
				if cmd.Bool("ids") {
					out.WriteByte(' ')
					out.Write(appendIDs(nil, ids))
				}
				out.WriteByte('\n')
			}
			return nil
		},
	}
}

// tokenizeJSONL encodes each {"text"} line of file and writes its {"n", "ids"} line.
func tokenizeJSONL(tok tokenizer.Tokenizer, file string, out *bufio.Writer) error {
	var in io.Reader = os.Stdin
	name := "standard input"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return badInput("--jsonl: %v", err)
		}
		defer f.Close()
		in, name = f, file
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxTokenizeLine)
	line := 0
	var buf []byte
	for sc.Scan() {
		line++
		var row struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil || row.Text == nil {
			why := "no \"text\" key"
			if err != nil {
				why = err.Error()
			}
			return badInput("%s line %d: %s; accepted: one JSON object {\"text\": \"...\"} per line", name, line, why)
		}
		ids := tok.Encode(*row.Text)
		buf = append(buf[:0], `{"n":`...)
		buf = strconv.AppendInt(buf, int64(len(ids)), 10)
		buf = append(buf, `,"ids":`...)
		buf = append(appendIDs(buf, ids), "}\n"...)
		if _, err := out.Write(buf); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return badInput("%s line %d: %v (lines may be at most %d MiB)", name, line+1, err, maxTokenizeLine>>20)
	}
	return nil
}

// appendIDs appends ids as a JSON list.
func appendIDs(b []byte, ids []int) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']')
}
