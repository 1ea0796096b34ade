#include "src/config/yaml_syntax.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string_view>
#include <vector>

#include "src/config/config_error.h"

namespace sluice {
namespace {

// Follows the parser's events through one document: where it starts, which collections are
// open (with where each starts), and the last quoted scalar. When the parser throws, what is
// still open is what the error is about.
class YamlStructure final : public YAML::EventHandler {
 public:
  struct Open {
    YAML::Mark mark;
    bool map;
    bool flow;
  };

  explicit YamlStructure(std::string_view text) : text_(text) {}

  bool empty() const { return empty_; }
  const YAML::Mark& first_mark() const { return first_; }
  const std::vector<Open>& open() const { return open_; }
  // Byte offset after which the last event started (0: none).
  std::size_t last_event_pos() const { return last_pos_; }
  // The start of the last scalar written in quotes (npos: none).
  std::size_t last_quoted_scalar() const { return last_quoted_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { event(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { event(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    event(mark, false);
    const auto pos = static_cast<std::size_t>(mark.pos);
    if (pos < text_.size() && (text_[pos] == '"' || text_[pos] == '\'')) last_quoted_ = pos;
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value style) override {
    event(mark, false);
    open_.push_back({mark, false, style == YAML::EmitterStyle::Flow});
  }
  void OnSequenceEnd() override { open_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value style) override {
    event(mark, false);
    open_.push_back({mark, true, style == YAML::EmitterStyle::Flow});
  }
  void OnMapEnd() override { open_.pop_back(); }

 private:
  void event(const YAML::Mark& mark, bool empty) {
    if (mark.pos >= 0) last_pos_ = static_cast<std::size_t>(mark.pos);
    if (seen_) return;
    seen_ = true;
    first_ = mark;
    empty_ = empty;
  }

  std::string_view text_;
  bool seen_ = false;
  bool empty_ = true;
  YAML::Mark first_;
  std::vector<Open> open_;
  std::size_t last_pos_ = 0;
  std::size_t last_quoted_ = std::string_view::npos;
};

std::string at(const YAML::Mark& mark) {
  return std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

YAML::Mark mark_of(std::string_view text, std::size_t pos) {
  YAML::Mark m;
  m.pos = static_cast<int>(pos);
  m.line = 0;
  m.column = 0;
  for (std::size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++m.line;
      m.column = 0;
    } else {
      ++m.column;
    }
  }
  return m;
}

// "end of file at L:C" or "'x' at L:C": where the parser gave up.
std::string gave_up_at(std::string_view text, const YAML::Mark& mark) {
  const auto pos = static_cast<std::size_t>(mark.pos < 0 ? 0 : mark.pos);
  if (pos >= text.size()) return "reached end of file at " + at(mark_of(text, text.size()));
  return "gave up at " + at(mark);
}

[[noreturn]] void fail(const std::string& source, const YAML::Mark& mark,
                       const std::string& message) {
  // yaml-cpp marks are 0-based; a null mark (-1) means it did not say where.
  throw ConfigError(source, mark.line + 1, mark.column + 1, "", "invalid YAML: " + message);
}

// The offset just past the quote closing the scalar that opens at `open` (npos: none).
std::size_t closing_quote(std::string_view text, std::size_t open) {
  const char q = text[open];
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;  // an escape: the next character is never the end
    } else if (text[i] == q) {
      if (q == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is a quote inside a single-quoted scalar
        continue;
      }
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The first quote at or after `from` that starts a scalar (after white space, a line start or
// flow punctuation) and is not closed before `limit`; comments are skipped. npos: none.
std::size_t unclosed_quote(std::string_view text, std::size_t from, std::size_t limit) {
  for (std::size_t i = from; i < limit && i < text.size(); ++i) {
    const char c = text[i];
    const char before = i == 0 ? '\n' : text[i - 1];
    const bool token_start = std::strchr(" \t\r\n[{,", before) != nullptr;
    if (c == '#' && token_start) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if ((c == '"' || c == '\'') && token_start) {
      const std::size_t end = closing_quote(text, i);
      if (end == std::string_view::npos || end > limit) return i;
      i = end - 1;
    }
  }
  return std::string_view::npos;
}

const YamlStructure::Open* innermost(const YamlStructure& s, bool map, bool flow) {
  const auto it = std::find_if(s.open().rbegin(), s.open().rend(),
                               [&](const auto& o) { return o.flow == flow && o.map == map; });
  return it == s.open().rend() ? nullptr : &*it;
}

const YamlStructure::Open* innermost_flow(const YamlStructure& s) {
  const auto it =
      std::find_if(s.open().rbegin(), s.open().rend(), [](const auto& o) { return o.flow; });
  return it == s.open().rend() ? nullptr : &*it;
}

const char* kind(const YamlStructure::Open& o) {
  if (o.flow) return o.map ? "flow map '{'" : "flow sequence '['";
  return o.map ? "block map" : "block sequence";
}

// A parser error, reported where the construct it is about starts when that is known.
[[noreturn]] void syntax_error(std::string_view text, const std::string& source,
                               const YAML::ParserException& e, const YamlStructure& s) {
  const std::string& msg = e.msg;
  namespace M = YAML::ErrorMsg;
  if (msg == M::END_OF_SEQ_FLOW || msg == M::END_OF_MAP_FLOW) {
    if (const auto* o = innermost(s, msg == M::END_OF_MAP_FLOW, true)) {
      fail(source, o->mark,
           std::string(kind(*o)) + " started here is never closed (" + gave_up_at(text, e.mark) +
               ")");
    }
  } else if (msg == M::FLOW_END) {
    const auto pos = static_cast<std::size_t>(e.mark.pos);
    const std::string closer = pos < text.size() ? std::string(1, text[pos]) : std::string("]");
    if (const auto* o = innermost_flow(s)) {
      fail(source, e.mark,
           "'" + closer + "' does not close the " + kind(*o) + " opened at " + at(o->mark));
    }
    fail(source, e.mark, "'" + closer + "' closes nothing: no flow collection is open here");
  } else if (msg == M::END_OF_MAP || msg == M::END_OF_SEQ) {
    if (const auto* o = innermost(s, msg == M::END_OF_MAP, false)) {
      fail(source, e.mark,
           msg + ": what is here does not fit the " + kind(*o) + " that starts at " + at(o->mark) +
               " (wrong indentation, or text after a value)");
    }
  } else if (msg == M::EOF_IN_SCALAR || msg == M::DOC_IN_SCALAR) {
    const auto limit = msg == M::EOF_IN_SCALAR ? text.size() : static_cast<std::size_t>(e.mark.pos);
    const std::size_t quote = unclosed_quote(text, s.last_event_pos(), limit);
    if (quote != std::string_view::npos) {
      const std::string why = msg == M::EOF_IN_SCALAR
                                  ? gave_up_at(text, e.mark)
                                  : "a document marker is inside it at " + at(e.mark);
      fail(source, mark_of(text, quote),
           "quoted scalar started here is never closed (" + why + ")");
    }
  }
  fail(source, e.mark, msg);
}

}  // namespace

void check_yaml_syntax(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  struct Document {
    bool empty;
    YAML::Mark mark;
  };
  std::vector<Document> documents;
  for (;;) {
    YamlStructure doc(text);
    try {
      if (!parser.HandleNextDocument(doc)) break;
    } catch (const YAML::DeepRecursion&) {
      throw;
    } catch (const YAML::ParserException& e) {
      syntax_error(text, source, e, doc);
    }
    // Every real document consumes input, so its start moves on. One that does not is a
    // yaml-cpp 0.7 loop on some invalid input (a stray ','; jbeder/yaml-cpp#1040: YAML::LoadAll
    // would exhaust memory), and the token it is stuck on is the syntax error.
    if (!documents.empty() && doc.first_mark().pos == documents.back().mark.pos) {
      fail(source, doc.first_mark(), "unexpected character");
    }
    // yaml-cpp 0.7 takes a quoted scalar that is still open at the end of the file (after a
    // line break) as running to the end: the rest of the file would silently be its value.
    if (const std::size_t q = doc.last_quoted_scalar();
        q != std::string_view::npos && closing_quote(text, q) == std::string_view::npos) {
      fail(source, mark_of(text, q),
           "quoted scalar started here is never closed (reached end of file at " +
               at(mark_of(text, text.size())) + ")");
    }
    documents.push_back({doc.empty(), doc.first_mark()});
  }
  std::size_t non_empty = 0;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    if (documents[i].empty) continue;
    if (++non_empty > 1 || i > 0) {
      throw ConfigError(source, documents[i].mark.line + 1, documents[i].mark.column + 1, "",
                        "only one YAML document is allowed");
    }
  }
}

}  // namespace sluice
