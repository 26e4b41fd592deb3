// Distribution names: PEP 503 normalisation, and the short maintained table of the
// ecosystem's import names that differ from the name of the distribution providing them
// (`import cv2` comes from opencv-python-headless). The table is consulted only for an
// import that no declared requirement and no installed distribution accounts for; a name
// outside it is a guess, reported with its candidates and never installed silently (a
// same-named unrelated package on PyPI is a supply-chain risk).

/** PEP 503 normalised distribution name, for comparing names. */
export function normalizeDistName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/** Import names whose distribution is named differently (or is well known under its own
 *  name), for imports that are not installed and not declared. opencv's headless build is
 *  the one for machines without a display (the sandbox has none). */
export const KNOWN_DISTRIBUTIONS: Record<string, string> = {
  PIL: 'Pillow',
  yaml: 'PyYAML',
  cv2: 'opencv-python-headless',
  sklearn: 'scikit-learn',
  skimage: 'scikit-image',
  bs4: 'beautifulsoup4',
  attr: 'attrs',
  dateutil: 'python-dateutil',
  jwt: 'PyJWT',
  Crypto: 'pycryptodome',
  mpl_toolkits: 'matplotlib',
  google: 'protobuf',
  fvcore: 'fvcore',
  iopath: 'iopath',
  mmcv: 'mmcv',
  mmengine: 'mmengine',
  mmdet: 'mmdet',
  apex: 'apex',
  pytorch_lightning: 'pytorch-lightning',
  lightning: 'lightning',
  huggingface_hub: 'huggingface-hub',
  sentencepiece: 'sentencepiece',
  tensorboardX: 'tensorboardX',
  pycocotools: 'pycocotools',
  addict: 'addict',
  einops: 'einops',
  timm: 'timm',
  transformers: 'transformers',
  scipy: 'scipy',
  matplotlib: 'matplotlib',
  pandas: 'pandas',
  tqdm: 'tqdm',
  termcolor: 'termcolor',
  tabulate: 'tabulate',
  numpy: 'numpy',
  torchvision: 'torchvision',
  omegaconf: 'omegaconf',
  hydra: 'hydra-core',
  safetensors: 'safetensors',
  packaging: 'packaging',
  requests: 'requests',
  rich: 'rich',
  psutil: 'psutil',
  seaborn: 'seaborn',
  thop: 'thop',
  ultralytics: 'ultralytics',
  loguru: 'loguru',
  kornia_rs: 'kornia-rs',
  einx: 'einx',
  ema_pytorch: 'ema-pytorch',
  accelerate: 'accelerate',
  beartype: 'beartype',
  jaxtyping: 'jaxtyping',
  opt_einsum: 'opt-einsum',
  networkx: 'networkx',
  sympy: 'sympy',
  h5py: 'h5py',
  yacs: 'yacs',
  shapely: 'shapely',
  pyclipper: 'pyclipper',
  lmdb: 'lmdb',
  regex: 'regex',
  ftfy: 'ftfy',
  imageio: 'imageio',
  xtcocotools: 'xtcocotools',
  munkres: 'munkres',
  chumpy: 'chumpy',
  json_tricks: 'json-tricks',
  mat4py: 'mat4py',
  modelindex: 'modelindex',
  rapidfuzz: 'rapidfuzz',
  submitit: 'submitit',
  tensorboard: 'tensorboard',
  torchmetrics: 'torchmetrics',
};

/** Modules a distribution once provided and removed in a release: an import of one needs a
 *  release before the removal, whatever else asks for the distribution (torch's undated
 *  requirements pull the newest). setuptools 82.0.0 removed `pkg_resources` (its changelog,
 *  "Deprecations and Removals", pypa/setuptools#3085); repositories of every age import it.
 *  The bound is added to the repository's requirements whether or not it declares the
 *  distribution (the resolver intersects them). */
export const REMOVED_MODULES: Record<string, string> = {
  pkg_resources: 'setuptools<82',
};
