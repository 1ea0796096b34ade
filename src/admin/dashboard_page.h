// The dashboard served at "/": src/admin/dashboard.html, embedded into the binary at build time
// so the admin server needs no files at run time.
#pragma once

#include <string_view>

namespace sluice {

std::string_view dashboard_html();

}  // namespace sluice
