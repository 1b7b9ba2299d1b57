package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hfTemplatesDir holds real chat templates with Hugging Face's renderings (see its
// README.md), in the shared test data beside the repository.
const hfTemplatesDir = "../../shared/testdata/templates"

// hfTemplateDate is the date the renderings' strftime_now saw.
var hfTemplateDate = time.Date(2024, time.July, 26, 0, 0, 0, 0, time.UTC)

// hfCase is one rendering: expected, or error when the template raises.
type hfCase struct {
	ID                  string          `json:"id"`
	Messages            json.RawMessage `json:"messages"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	BOS                 string          `json:"bos_token"`
	EOS                 string          `json:"eos_token"`
	Expected            *string         `json:"expected"`
	Error               *string         `json:"error"`
}

// TestChatTemplatesMatchHuggingFace renders every case of every template in the shared test
// data and requires Hugging Face's text byte for byte, or an error with its message.
func TestChatTemplatesMatchHuggingFace(t *testing.T) {
	templates, err := filepath.Glob(filepath.Join(hfTemplatesDir, "*.jinja"))
	require.NoError(t, err)
	if len(templates) == 0 {
		t.Skipf("the shared chat templates (%s, beside the repository) are absent", hfTemplatesDir)
	}
	for _, path := range templates {
		name := strings.TrimSuffix(filepath.Base(path), ".jinja")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			raw, err := os.ReadFile(strings.TrimSuffix(path, ".jinja") + ".cases.json")
			require.NoError(t, err, "every template has its cases")
			var cases []hfCase
			require.NoError(t, json.Unmarshal(raw, &cases))
			require.NotEmpty(t, cases)
			tmpl, err := CompileChatTemplate(string(src), path)
			require.NoError(t, err)
			passed := 0
			for _, c := range cases {
				ok := t.Run(c.ID, func(t *testing.T) {
					require.True(t, (c.Expected == nil) != (c.Error == nil), "a case has expected or error")
					got, err := tmpl.Render(ChatInput{Messages: c.Messages, AddGenerationPrompt: c.AddGenerationPrompt,
						BOS: c.BOS, EOS: c.EOS, Now: func() time.Time { return hfTemplateDate }})
					if c.Error != nil {
						require.ErrorContains(t, err, *c.Error)
						return
					}
					require.NoError(t, err)
					require.Equal(t, *c.Expected, got)
				})
				if ok {
					passed++
				}
			}
			t.Logf("%s: %d of %d cases match", name, passed, len(cases))
		})
	}
}
