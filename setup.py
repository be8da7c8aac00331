"""beamcrawl: the Apache Nutch crawl cycle as Apache Beam pipelines over Avro files."""

from setuptools import setup

setup(
    name='beamcrawl',
    version='0.1.0',
    description='The Apache Nutch crawl cycle as Apache Beam pipelines over Avro files',
    python_requires='>=3.10',
    packages=['pipelines', 'transforms', 'transforms.policy', 'beamcrawl_conf'],
    # conf/ (defaults and rule files) ships inside the installed package as beamcrawl_conf.
    package_dir={'beamcrawl_conf': 'conf'},
    package_data={'beamcrawl_conf': ['*.yaml', '*.txt', '*.xml']},
    install_requires=[
        'apache-beam==2.77.*',
        'fastavro>=1.9',
        'requests>=2.31',
        'protego>=0.3',
        'tldextract>=5.1',
        'PyYAML>=6.0',
        'lxml>=5.0',
        'matplotlib>=3.7',      # schedule-sim --plot
    ],
    extras_require={
        'test': ['pytest>=8', 'pytest-timeout>=2.3'],
    },
    entry_points={'console_scripts': ['beamcrawl = pipelines.cli:main']},
)
