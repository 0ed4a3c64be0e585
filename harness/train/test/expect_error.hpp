// A check the training tests share: a call throws a given exception type with exactly a message.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

namespace ampbench::train::test {

// Runs `call` and checks that it throws E with exactly `message`.
template <class E>
void expect_error(const std::function<void()>& call, const std::string& message) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected: " << message;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), message);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what() << "; expected: " << message;
  }
}

}  // namespace ampbench::train::test
