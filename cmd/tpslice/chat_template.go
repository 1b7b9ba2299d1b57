package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tpslice/tpslice/server"
)

const chatTemplateUsage = "usage: tpslice chat-template (--model M | --template FILE.jinja [--bos S] [--eos S]) --messages FILE.json [--no-generation-prompt]"

// chatTemplate prints the prompt a conversation renders to, exactly as the server (and
// Hugging Face) renders it, with no newline added:
//
//	tpslice chat-template --model M --messages FILE.json
//	tpslice chat-template --template FILE.jinja [--bos S] [--eos S] --messages FILE.json
//
// --model takes what serve takes; its template is the one serve uses (LoadChatTemplate),
// bos_token and eos_token the text of its vocabulary's BOS and EOS. FILE.json is a JSON
// array of messages, or an object with "messages" (and "tools"), as a request body has.
func chatTemplate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chat-template", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The help, for -h and for a missing flag; flag's own usage (fs.Usage) stays out of it.
	const help = chatTemplateUsage + "\n\nPrints the prompt the chat template renders the messages to, with no newline added."
	model := fs.String("model", "", modelUsage+"; its chat template and BOS/EOS text are used")
	templatePath := fs.String("template", "", "a Jinja chat template `FILE` instead of a model's")
	bos := fs.String("bos", "", "bos_token's text for --template (e.g. <s>)")
	eos := fs.String("eos", "", "eos_token's text for --template (e.g. </s>)")
	messagesPath := fs.String("messages", "", "a JSON `FILE`: an array of messages, or an object with \"messages\" (and \"tools\")")
	noGenerationPrompt := fs.Bool("no-generation-prompt", false, "do not open the assistant's turn (add_generation_prompt false)")
	if err := parseFlagsHelp(fs, args, help); err != nil {
		return err
	}
	fail := func(format string, a ...any) error { return fmt.Errorf("chat-template: "+format, a...) }
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case set["model"] == set["template"]:
		printHelp(fs, help)
		return fail("give one of --model and --template")
	case set["model"] && (set["bos"] || set["eos"]):
		return fail("--bos and --eos go with --template; a model's come from its vocabulary")
	case *messagesPath == "":
		printHelp(fs, help)
		return fail("--messages is required")
	}
	messages, tools, err := server.ReadConversation(*messagesPath)
	if err != nil {
		return fail("--messages %s: %w", *messagesPath, err)
	}

	var src, origin string
	if set["template"] {
		b, err := os.ReadFile(*templatePath)
		if err != nil {
			return fail("--template: %w", err)
		}
		src, origin = string(b), *templatePath
	} else if src, origin, *bos, *eos, err = server.ModelChatTemplate(*model); err != nil {
		return fail("%w", err)
	}
	if src == "" {
		fmt.Fprintf(stderr, "tpslice: %s has no chat template; using the server's plain one (\"role: content\" lines)\n", *model)
	}
	tmpl, err := server.CompileChatTemplate(src, origin)
	if err != nil {
		return fail("%w", err)
	}
	prompt, err := tmpl.Render(server.ChatInput{Messages: messages, Tools: tools, AddGenerationPrompt: !*noGenerationPrompt, BOS: *bos, EOS: *eos})
	if err != nil {
		return fail("%w", err)
	}
	_, err = io.WriteString(stdout, prompt)
	return err
}
