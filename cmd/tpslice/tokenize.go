package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models/stories260k"
)

// tokenizeReport is tokenize's --json output.
type tokenizeReport struct {
	IDs    []int    `json:"ids"`
	Pieces []string `json:"pieces"`
}

// tokenize prints the token ids and vocabulary pieces of TEXT:
//
//	tpslice tokenize [--model M] [--no-bos] [--json] TEXT
//
// M is what generate takes (engine.LoadTokenizer: stories260K by default, a preset, a GGUF
// file, vocab-only too, a Hugging Face directory or tokenizer.json, a llama2.c checkpoint
// or tokenizer). Flags go before TEXT: Go's flag parsing stops at the first argument that is not a
// flag, so "tokenize --model m hello --json" would read "--json" as a second argument (an
// error). TEXT is one argument; quote it.
func tokenize(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", stories260k.Name, modelUsage+"; also a vocab-only GGUF file, a tokenizer.json or a llama2.c tokenizer.bin")
	noBOS := fs.Bool("no-bos", false, "do not add the special tokens the vocab asks for (BOS)")
	asJSON := fs.Bool("json", false, `print one JSON object {"ids": [...], "pieces": [...]}`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		return usageError{errors.New("tokenize: no TEXT given (tpslice tokenize [--model M] TEXT)")}
	case 1:
	default:
		return usageError{fmt.Errorf("tokenize: want one TEXT argument, got %d (%q); quote the text, and put flags before it", fs.NArg(), fs.Args())}
	}
	tok, err := engine.LoadTokenizer(*model)
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	ids, err := tok.Encode(fs.Arg(0), !*noBOS)
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	rep := tokenizeReport{IDs: ids, Pieces: make([]string, len(ids))}
	for i, id := range ids {
		rep.Pieces[i] = tok.Piece(id)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false) // pieces such as "<s>" stay readable
		return enc.Encode(rep)
	}
	idStrs, quoted := make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		idStrs[i] = strconv.Itoa(id)
		quoted[i] = strconv.Quote(rep.Pieces[i])
	}
	_, err = fmt.Fprintf(stdout, "ids: %s\npieces: %s\n", strings.Join(idStrs, " "), strings.Join(quoted, " "))
	return err
}
