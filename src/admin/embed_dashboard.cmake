# Writes OUTPUT: a .cc defining sluice::dashboard_html() with the contents of INPUT.
# Run with: cmake -DINPUT=dashboard.html -DOUTPUT=dashboard_page.cc -P embed_dashboard.cmake
file(READ ${INPUT} content)
set(delimiter "SLUICE_DASHBOARD")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )${delimiter}\"")
endif()
file(WRITE ${OUTPUT}.tmp
  "// Generated from src/admin/dashboard.html by embed_dashboard.cmake. Do not edit.\n"
  "#include \"src/admin/dashboard_page.h\"\n\n"
  "namespace sluice {\n\n"
  "std::string_view dashboard_html() {\n"
  "  static constexpr char kPage[] = R\"${delimiter}(${content})${delimiter}\";\n"
  "  return {kPage, sizeof(kPage) - 1};\n"
  "}\n\n"
  "}  // namespace sluice\n")
# Only touch OUTPUT when it changed, so an unrelated rebuild does not recompile it.
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
