package server

import (
	"testing"
	"time"

	"github.com/ardanlabs/jinja"
	"github.com/stretchr/testify/require"
)

// The expected strings below are what Python 3.11 prints for the same calls.

// tojsonValue is {"b": 1, "a": [...], "s": "...", "e": [], "d": {}} as Python's json reads it.
const tojsonValue = `{"b": 1, "a": [1, 2.0, 1e-05, 1e16, 123456789012345.6, -0.0, 0.1, 1.5e300, null, true, false],
	"s": "<tag> & \"q\" \\ \n\t\b\f\u0001 é ✓ \u2028 😀", "e": [], "d": {}}`

func TestTojsonMatchesPython(t *testing.T) {
	v, err := jsonValue([]byte(tojsonValue))
	require.NoError(t, err)
	kw := func(kv ...any) map[string]jinja.Value {
		m := map[string]jinja.Value{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(jinja.Value)
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		kwargs map[string]jinja.Value
		want   string
	}{
		{"default", nil, "{\"b\": 1, \"a\": [1, 2.0, 1e-05, 1e+16, 123456789012345.6, -0.0, 0.1, 1.5e+300, null, true, false], " +
			"\"s\": \"<tag> & \\\"q\\\" \\\\ \\n\\t\\b\\f\\u0001 é ✓ \u2028 😀\", \"e\": [], \"d\": {}}"},
		{"indent 2", kw("indent", jinja.NewInt(2)), "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    2.0,\n    1e-05,\n    1e+16,\n    123456789012345.6,\n" +
			"    -0.0,\n    0.1,\n    1.5e+300,\n    null,\n    true,\n    false\n  ],\n" +
			"  \"s\": \"<tag> & \\\"q\\\" \\\\ \\n\\t\\b\\f\\u0001 é ✓ \u2028 😀\",\n  \"e\": [],\n  \"d\": {}\n}"},
		{"ensure_ascii", kw("ensure_ascii", jinja.NewBool(true)), "{\"b\": 1, \"a\": [1, 2.0, 1e-05, 1e+16, 123456789012345.6, -0.0, 0.1, 1.5e+300, null, true, false], " +
			"\"s\": \"<tag> & \\\"q\\\" \\\\ \\n\\t\\b\\f\\u0001 \\u00e9 \\u2713 \\u2028 \\ud83d\\ude00\", \"e\": [], \"d\": {}}"},
		{"separators and sort_keys", kw("separators", jinja.NewList([]jinja.Value{jinja.NewString(","), jinja.NewString(":")}), "sort_keys", jinja.NewBool(true)),
			"{\"a\":[1,2.0,1e-05,1e+16,123456789012345.6,-0.0,0.1,1.5e+300,null,true,false],\"b\":1,\"d\":{},\"e\":[]," +
				"\"s\":\"<tag> & \\\"q\\\" \\\\ \\n\\t\\b\\f\\u0001 é ✓ \u2028 😀\"}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tojsonFilter([]jinja.Value{v}, tc.kwargs)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.AsString())
		})
	}
	k, err := jsonValue([]byte(`{"k": [1]}`))
	require.NoError(t, err)
	got, err := tojsonFilter([]jinja.Value{k, jinja.NewBool(false), jinja.NewInt(0)}, nil) // positional, as transformers' signature
	require.NoError(t, err)
	require.Equal(t, "{\n\"k\": [\n1\n]\n}", got.AsString())
	got, err = tojsonFilter([]jinja.Value{k}, kw("indent", jinja.NewString("\t")))
	require.NoError(t, err)
	require.Equal(t, "{\n\t\"k\": [\n\t\t1\n\t]\n}", got.AsString())

	_, err = tojsonFilter([]jinja.Value{jinja.Undefined()}, nil)
	require.ErrorContains(t, err, "Object of type Undefined is not JSON serializable")
	_, err = tojsonFilter([]jinja.Value{k}, kw("indnt", jinja.NewInt(2)))
	require.ErrorContains(t, err, "unexpected keyword argument 'indnt'")
	_, err = tojsonFilter([]jinja.Value{k}, kw("separators", jinja.NewString(",")))
	require.ErrorContains(t, err, "separators must be two strings")
}

func TestPythonFloatRepr(t *testing.T) {
	for f, want := range map[float64]string{0.1: "0.1", 1: "1.0", 100: "100.0", 1e16: "1e+16", 1e15: "1000000000000000.0",
		1.5e-5: "1.5e-05", 0.0001: "0.0001", 123.456: "123.456", -2.5: "-2.5", 5e-324: "5e-324",
		1.7976931348623157e308: "1.7976931348623157e+308"} {
		require.Equal(t, want, pyFloatRepr(f), "%v", f)
	}
}

func TestStrftimeMatchesPython(t *testing.T) {
	day := time.Date(2024, time.July, 26, 0, 0, 0, 0, time.UTC)
	for format, want := range map[string]string{
		"%d %b %Y":                   "26 Jul 2024",
		"%Y-%m-%d":                   "2024-07-26",
		"%B %d, %Y":                  "July 26, 2024",
		"%-d %B %Y":                  "26 July 2024",
		"%A %a %j %U %W %V %G %u %w": "Friday Fri 208 29 30 30 2024 5 5",
		"%c|%x|%X|%D|%F|%T|%R|%r":    "Fri Jul 26 00:00:00 2024|07/26/24|00:00:00|07/26/24|2024-07-26|00:00:00|00:00|12:00:00 AM",
		"%e|%_d|%^a|%#B|%I %p|%y %C|%z|%Z|%%|%f|%Q|%": "26|26|FRI|JULY|12 AM|24 20|||%|000000|%Q|%",
		"%H:%M:%S %10Y": "00:00:00 0000002024",
	} {
		require.Equal(t, want, pyStrftime(day, format), "%q", format)
	}
}

func TestPercentFormatAndString(t *testing.T) {
	got, err := pyPercentFormat("%s has %d items, %.2f%% %5.1f|%-4d|%x|%r",
		[]jinja.Value{jinja.NewString("x"), jinja.NewInt(3), jinja.NewFloat(99.5), jinja.NewFloat(2.25), jinja.NewInt(7), jinja.NewInt(255), jinja.NewString("a'b")}, nil)
	require.NoError(t, err)
	require.Equal(t, `x has 3 items, 99.50%   2.2|7   |ff|"a'b"`, got)
	_, err = pyPercentFormat("%s %s", []jinja.Value{jinja.NewString("x")}, nil)
	require.ErrorContains(t, err, "not enough arguments")

	v, err := jsonValue([]byte(`[1, "a", null, 2.0, {"k": "it's"}]`))
	require.NoError(t, err)
	require.Equal(t, `[1, 'a', None, 2.0, {'k': "it's"}]`, pyStr(v))
}

// TestPythonTemplateSemantics renders what the library does differently from Python's
// Jinja unless this package steps in; the expected text is Python jinja2's.
func TestPythonTemplateSemantics(t *testing.T) {
	msgs := []byte(`[{"role": "user", "content": "Hi", "n": 2.0}]`)
	for _, tc := range []struct{ name, src, want string }{
		{"tojson keeps order and Python's layout", `{{ messages[0] | tojson }}|{{ messages[0]|tojson(indent=1) }}`,
			"{\"role\": \"user\", \"content\": \"Hi\", \"n\": 2.0}|{\n \"role\": \"user\",\n \"content\": \"Hi\",\n \"n\": 2.0\n}"},
		{"tojson inside a string is text", `{{ "| tojson" }}{{ '|tojson(' }}`, "| tojson|tojson("},
		{"Python escapes in literals", `{{ 'uni\u00e9|hex\x41|oct\101|cont\` + "\n" + `inued|q\'s|back\\slash|keep\d' }}`, `unié|hexA|octA|continued|q's|back\slash|keep\d`},
		{"adjacent literals join", `{{ 'a' "b" 'c' }}`, "abc"},
		{"string filter is str()", `{{ none | string }}|{{ messages[0].n | string }}|{{ [1, none] | string }}`, "None|2.0|[1, None]"},
		{"format filter", `{{ '%s=%d' | format('x', 3) }}`, "x=3"},
		{"strftime_now uses the given clock", `{{ strftime_now('%d %b %Y') }}`, "26 Jul 2024"},
		{"missing attribute is undefined", `{{ messages[0].tool_calls is defined }}|{% if messages[0].tool_calls %}x{% endif %}`, "False|"},
		{"tools is None", `{{ tools is defined }}|{{ tools is none }}`, "True|True"},
		{"raise_exception in a comment is text", `{# {{ raise_exception('x') }} #}ok`, "ok"},
		{"trim and lstrip blocks", "a\n  {% if true %}\nb\n  {% endif %}\nc", "a\nb\nc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := CompileChatTemplate(tc.src, "test")
			require.NoError(t, err)
			got, err := tmpl.Render(ChatInput{Messages: msgs, Now: func() time.Time { return hfTemplateDate }})
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	tmpl, err := CompileChatTemplate(`{{ raise_exception('Conversation roles must alternate') }}`, "test.jinja")
	require.NoError(t, err)
	_, err = tmpl.Render(ChatInput{Messages: msgs})
	require.ErrorContains(t, err, "Conversation roles must alternate")
	require.ErrorContains(t, err, "test.jinja")
	_, err = tmpl.Render(ChatInput{Messages: []byte(`{"role": "user"}`)})
	require.ErrorContains(t, err, "messages must be a JSON array")
}
