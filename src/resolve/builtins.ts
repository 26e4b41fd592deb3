// Python facts the resolver and emitter need that are part of the language, not of any
// repository: the builtin namespace (names that resolve without a binding, §4.2.4
// "the builtins module"), the module attributes every module has, and the standard
// library's top-level modules (`sys.stdlib_module_names`, Python 3.11) for grouping
// imports per PEP 8 (standard library, then third party).

const words = (s: string) => new Set(s.trim().split(/\s+/));

/** `dir(builtins)` of CPython 3.11 (public names plus `__import__`, `__build_class__`, `__debug__`). */
export const BUILTINS: ReadonlySet<string> = words(`
  ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BlockingIOError
  BrokenPipeError BufferError BytesWarning ChildProcessError ConnectionAbortedError ConnectionError
  ConnectionRefusedError ConnectionResetError DeprecationWarning EOFError Ellipsis EncodingWarning
  EnvironmentError Exception ExceptionGroup False FileExistsError FileNotFoundError
  FloatingPointError FutureWarning GeneratorExit IOError ImportError ImportWarning IndentationError
  IndexError InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError
  ModuleNotFoundError NameError None NotADirectoryError NotImplemented NotImplementedError OSError
  OverflowError PendingDeprecationWarning PermissionError ProcessLookupError RecursionError
  ReferenceError ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration
  SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError True TypeError
  UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError
  UnicodeWarning UserWarning ValueError Warning ZeroDivisionError __build_class__ __debug__
  __import__ abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr
  classmethod compile complex copyright credits delattr dict dir divmod enumerate eval exec exit
  filter float format frozenset getattr globals hasattr hash help hex id input int isinstance
  issubclass iter len license list locals map max memoryview min next object oct open ord pow print
  property quit range repr reversed round set setattr slice sorted staticmethod str sum super tuple
  type vars zip
`);

/** Attributes every module has at run time (§3.2 "Modules"). */
export const MODULE_DUNDERS: ReadonlySet<string> = words(`
  __name__ __doc__ __file__ __spec__ __loader__ __package__ __builtins__ __annotations__ __dict__ __cached__
`);

/** `sys.stdlib_module_names` of CPython 3.11 (top-level names). */
export const STDLIB_MODULES: ReadonlySet<string> = words(`
  __future__ _collections_abc _thread abc aifc antigravity argparse array ast asynchat asyncio
  asyncore atexit audioop base64 bdb binascii bisect builtins bz2 cProfile calendar cgi cgitb chunk
  cmath cmd code codecs codeop collections colorsys compileall concurrent configparser contextlib
  contextvars copy copyreg crypt csv ctypes curses dataclasses datetime dbm decimal difflib dis
  distutils doctest email encodings ensurepip enum errno faulthandler fcntl filecmp fileinput
  fnmatch fractions ftplib functools gc genericpath getopt getpass gettext glob graphlib grp gzip
  hashlib heapq hmac html http idlelib imaplib imghdr imp importlib inspect io ipaddress itertools
  json keyword lib2to3 linecache locale logging lzma mailbox mailcap marshal math mimetypes mmap
  modulefinder msilib msvcrt multiprocessing netrc nis nntplib nt ntpath nturl2path numbers opcode
  operator optparse os ossaudiodev pathlib pdb pickle pickletools pipes pkgutil platform plistlib
  poplib posix posixpath pprint profile pstats pty pwd py_compile pyclbr pydoc pydoc_data pyexpat
  queue quopri random re readline reprlib resource rlcompleter runpy sched secrets select selectors
  shelve shlex shutil signal site smtpd smtplib sndhdr socket socketserver spwd sqlite3 sre_compile
  sre_constants sre_parse ssl stat statistics string stringprep struct subprocess sunau symtable sys
  sysconfig syslog tabnanny tarfile telnetlib tempfile termios textwrap this threading time timeit
  tkinter token tokenize tomllib trace traceback tracemalloc tty turtle turtledemo types typing
  unicodedata unittest urllib uu uuid venv warnings wave weakref webbrowser winreg winsound wsgiref
  xdrlib xml xmlrpc zipapp zipfile zipimport zlib zoneinfo
`);
