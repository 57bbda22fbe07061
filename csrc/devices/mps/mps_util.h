// Small helpers shared by the mps sources (Objective-C++, ARC).
#pragma once

#import <Foundation/Foundation.h>

#include <exception>
#include <string>

namespace aotishim::mps {

// Runs body inside an autorelease pool, so objects Metal hands back
// autoreleased are released per call, not per thread. An exception leaves
// after the pool is drained.
template <typename Body>
void pooled(Body&& body) {
  std::exception_ptr error;
  @autoreleasepool {
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

inline std::string describe(NSError* error) {
  if (error == nil) return "no details given";
  const char* text = [[error localizedDescription] UTF8String];
  return text != nullptr ? std::string(text) : std::string("no details given");
}

}  // namespace aotishim::mps
