// The canonical name of a gRPC status code ("OK", "RESOURCE_EXHAUSTED", ...), for the test
// client's and the load generator's reports.
#pragma once

#include <string>

namespace sluice::itest {

// "UNKNOWN_CODE_<n>" for a code outside 0..16.
std::string grpc_status_name(int code);

}  // namespace sluice::itest
