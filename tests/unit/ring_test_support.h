// Test harness for the transport: runs a real program under libmemledger_preload.so with a live
// control socket, drains every image's ring while it runs (heartbeat included) and collects the
// decoded records per image. No mocks: the same ControlSocket/RingReader the recorder uses.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "recorder/ring_reader.h"

namespace memledger::ringtest {

using wire::AllocKind;
using wire::Op;
using wire::RecordType;

inline std::string preloadPath() { return std::string(MEMLEDGER_BINARY_DIR) + "/lib/libmemledger_preload.so"; }

inline uint64_t monoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct Rec {
  RecordType type;
  AllocKind kind;
  uint16_t aux;
  uint32_t tid;
  uint64_t ts, a, b, c;
  std::vector<uint64_t> frames;
  std::string text;
  Op op() const { return static_cast<Op>(aux); }
};

struct Image {
  wire::Hello hello{};
  std::string command, exe;
  std::vector<Rec> recs;
  uint64_t counts[static_cast<int>(RecordType::Count)] = {};
  uint64_t waitNs = 0;
  bool detached = false;
  uint32_t lost = 0;
  uint64_t slotsConsumed = 0;   // what drain/drainFinal returned
  uint64_t slotsDelivered = 0;  // slots of the records delivered: equal unless slots were skipped
  uint64_t unresolvedStacks = 0;  // delta Stack records whose base was not the thread's last one
  // Per thread: the hash and whole stack of its last Stack record (a delta record's base).
  std::map<uint32_t, std::pair<uint64_t, std::vector<uint64_t>>> lastStack;
};

struct RunResult {
  int status = -1;
  bool timedOut = false;
  std::string out;
  std::vector<Image> images;
  const Image* byPid(uint32_t pid) const {
    for (const Image& i : images) if (i.hello.pid == pid) return &i;
    return nullptr;
  }
};

class Collector : public recorder::RecordSink {
 public:
  Collector(Image* image, bool keep) : image_(image), keep_(keep) {}
  void onRecord(const recorder::Decoded& d) override {
    auto t = static_cast<size_t>(d.type);
    if (t < static_cast<size_t>(RecordType::Count)) ++image_->counts[t];
    image_->slotsDelivered += 1 + wire::continuationSlotsFor(d.type, d.aux);
    if (!keep_) return;
    Rec r{d.type, d.kind, d.aux, d.tid, d.ts, d.a, d.b, d.c,
          std::vector<uint64_t>(d.frames.begin(), d.frames.end()), std::string(d.text)};
    if (d.type == RecordType::Stack) {
      // Rec::frames is the whole stack: the carried frames, then the outer ones the record
      // shares with its thread's previous Stack record (wire.h, "Stack records").
      auto& [lastHash, lastFrames] = image_->lastStack[d.tid];
      if (d.b) {
        if (lastHash == d.c && d.b <= lastFrames.size())
          r.frames.insert(r.frames.end(), lastFrames.end() - static_cast<long>(d.b), lastFrames.end());
        else
          ++image_->unresolvedStacks;
      }
      lastHash = d.a;
      lastFrames = r.frames;
    }
    image_->recs.push_back(std::move(r));
  }

 private:
  Image* image_;
  bool keep_;
};

struct RunOptions {
  bool preload = true;
  bool keepRecords = true;
  bool heartbeat = true;  // false: the recorder maps the ring but never answers (detach test)
  bool drainWhileRunning = true;
  int timeoutSec = 60;
  std::vector<std::string> env;  // extra NAME=value entries
};

// Runs argv (argv[0] a path) and returns its wait status, stdout and every image's records.
inline RunResult runTraced(const std::vector<std::string>& argv, const RunOptions& opt = {}) {
  RunResult res;
  char tmpl[] = "/tmp/memledger-ringtest.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string err;
  auto sock = recorder::ControlSocket::listen(dir, &err);
  if (!sock) {
    res.out = "listen failed: " + err;
    return res;
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return res;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    std::vector<std::string> envs = opt.env;
    if (opt.preload) {
      envs.push_back("LD_PRELOAD=" + preloadPath());
      envs.push_back("MEMLEDGER_DIR=" + dir);
    }
    for (const std::string& e : envs) putenv(strdup(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  fcntl(pipefd[0], F_SETFL, O_NONBLOCK);

  struct Live {
    std::unique_ptr<recorder::RingReader> reader;
    size_t image;
  };
  std::vector<Live> live;
  res.images.reserve(64);
  auto acceptAll = [&] {
    while (auto reg = sock->accept()) {
      Image img;
      img.hello = reg->hello;
      img.command = reg->command;
      img.exe = reg->exe;
      std::string mapErr;
      auto reader = recorder::RingReader::map(std::move(*reg), &mapErr);
      if (!reader) continue;
      res.images.push_back(std::move(img));
      live.push_back({std::move(reader), res.images.size() - 1});
    }
  };
  auto readOut = [&] {
    char buf[4096];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) res.out.append(buf, static_cast<size_t>(n));
  };
  uint64_t deadline = monoNs() + static_cast<uint64_t>(opt.timeoutSec) * 1000000000ull;
  bool exited = false;
  while (!exited) {
    pollfd pfd[2] = {{sock->fd(), POLLIN, 0}, {pipefd[0], POLLIN, 0}};
    poll(pfd, 2, 2);
    acceptAll();
    for (Live& l : live) {
      if (opt.heartbeat) l.reader->heartbeat(monoNs());
      if (!opt.drainWhileRunning) continue;
      Collector sink(&res.images[l.image], opt.keepRecords);
      while (size_t n = l.reader->drain(sink, 1 << 16)) res.images[l.image].slotsConsumed += n;
    }
    readOut();
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      res.status = st;
      exited = true;
    } else if (monoNs() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &res.status, 0);
      res.timedOut = true;
      exited = true;
    }
  }
  acceptAll();
  for (Live& l : live) {
    Collector sink(&res.images[l.image], opt.keepRecords);
    res.images[l.image].slotsConsumed += l.reader->drainFinal(sink);
    res.images[l.image].waitNs = l.reader->waitNs();
    res.images[l.image].detached = l.reader->detached();
    res.images[l.image].lost = l.reader->lost();
  }
  readOut();
  close(pipefd[0]);
  sock.reset();
  unlink((dir + "/" + wire::kSocketName).c_str());
  rmdir(dir.c_str());
  return res;
}

inline std::string selfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace memledger::ringtest
