// `${expr}` substitution for model templates (models/FORMAT.md, "Templates").
#pragma once

#include <map>
#include <string>

#include "graph/base/status.h"

namespace fusert {

/// Parameter bindings of one template expansion: name -> text.
using Bindings = std::map<std::string, std::string>;

/// Replaces every `${expr}` in `text`. `expr` is a parameter name (textual substitution) or
/// integer arithmetic (+ - * / % parentheses, integer literals, integer-valued parameters).
/// Errors describe the bad expression; the caller adds the location.
Result<std::string> substitute(const std::string& text, const Bindings& env);

}  // namespace fusert
